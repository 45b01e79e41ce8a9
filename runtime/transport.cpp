#include "runtime/transport.hpp"

#include <fmt/format.h>

#include <thread>

namespace topocoll::runtime {

void Transport::wait(std::chrono::steady_clock::time_point /*deadline*/) {
  std::this_thread::yield();
}

bool Transport::test_recv_consume(Request r, Consume /*consume*/, void* /*context*/) {
  TOPOCOLL_ASSERT(false, fmt::format("test_recv_consume of request {} through a transport that cannot show a message "
                                     "in place (reads_in_place(peer) is false)",
                                     r));
  return false;
}

void Transport::post_pushed(int peer, int channel, const std::byte* /*target*/, std::size_t bytes) {
  TOPOCOLL_ASSERT(false, fmt::format("post_pushed of {} bytes to peer {} on channel {} through a transport that "
                                     "cannot push (push_target is always null)",
                                     bytes, peer, channel));
}

void Transport::switch_send(const SwitchMember& m, int /*channel*/, const void* /*data*/, std::size_t /*bytes*/) {
  TOPOCOLL_ASSERT(false, fmt::format("switch_send on group {} through a transport that cannot reduce (the executor "
                                     "refuses such schedules at bind time)",
                                     m.group));
}

bool Transport::switch_recv(const SwitchMember& m, int /*channel*/, std::size_t /*bytes*/,
                            const std::function<void(std::span<const std::byte* const>)>& /*consume*/) {
  TOPOCOLL_ASSERT(false, fmt::format("switch_recv on group {} through a transport that cannot reduce (the executor "
                                     "refuses such schedules at bind time)",
                                     m.group));
  return false;
}

}  // namespace topocoll::runtime
