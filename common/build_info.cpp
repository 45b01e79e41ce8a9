#include "common/build_info.hpp"

#include "topocoll_build_commit.hpp"  // generated in the build tree (common/CMakeLists.txt)

namespace topocoll {

std::string_view build_commit() {
  return TOPOCOLL_BUILD_COMMIT;
}

}  // namespace topocoll
