#include "runtime/transport.hpp"

#include <thread>

namespace topocoll::runtime {

void Transport::wait(std::chrono::steady_clock::time_point /*deadline*/) {
  std::this_thread::yield();
}

}  // namespace topocoll::runtime
