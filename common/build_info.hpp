// What the running binary was built from: its version (the project's, CMakeLists.txt) and the
// commit of the checkout it was built in (cmake/build_commit.cmake, refreshed at every build).
#pragma once

#include <string_view>

namespace topocoll {

// 12 hex digits of the commit, with "+uncommitted changes" when tracked files differed from it
// at build time; "unknown" when the source was not a git checkout (a tarball, a pip sdist).
std::string_view build_commit();

}  // namespace topocoll
