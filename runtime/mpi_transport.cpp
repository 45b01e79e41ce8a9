#include "runtime/mpi_transport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"
#include "runtime/faults.hpp"

namespace topocoll::runtime {

namespace {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("{} failed: {}", what, mpi_error_string(rc)));
}

}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm) {
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiTransport::~MpiTransport() {
  // Unwinding towards an abort of the job: a peer may be gone, so waiting could hang, and MPI may
  // still write into the caller's buffers: leave everything as it is.
  if (std::uncaught_exceptions() > 0) return;
  // After an error receives may still be posted: cancel them; sends complete (peers drain them or
  // the job is being torn down anyway).
  slots_.for_each([](Request, Slot& s) {
    if (s.request != MPI_REQUEST_NULL && !s.send) {
      MPI_Cancel(&s.request);
      MPI_Wait(&s.request, MPI_STATUS_IGNORE);
    }
  });
  try {
    flush();
  } catch (...) {
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::check_peer(int peer, std::size_t bytes, const char* what) const {
  if (peer < 0 || peer >= size_) throw InputError(fmt::format("{} peer {}: the job has {} ranks", what, peer, size_));
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw InputError(
        fmt::format("a message of {} bytes: the MPI transport moves at most {} bytes at once", bytes, INT_MAX));
}

Transport::Request MpiTransport::post(bool send, int peer, int channel, void* data, std::size_t bytes) {
  check_peer(peer, bytes, send ? "send to" : "receive from");
  if (channel < 0) throw InputError(fmt::format("{} on channel {}: expected >= 0", send ? "send" : "receive", channel));
  const Request r = slots_.acquire(Slot{MPI_REQUEST_NULL, send, peer, channel, bytes});
  MPI_Request* request = &slots_.at(r, "MPI transport").request;
  const int rc = send ? MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, channel, comm_, request)
                      : MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, channel, comm_, request);
  if (rc != MPI_SUCCESS) {
    slots_.release(r);
    check(rc, send ? "MPI_Isend" : "MPI_Irecv");
  }
  return r;
}

Transport::Request MpiTransport::post_send(int peer, int channel, const void* data, std::size_t bytes) {
  return post(true, peer, channel, const_cast<void*>(data), bytes);
}

bool MpiTransport::test_send(Request r) {
  heartbeat();
  Slot& s = slots_.at(r, "MPI transport: test_send");
  int flag = 0;
  check(MPI_Test(&s.request, &flag, MPI_STATUS_IGNORE), "MPI_Test (send)");
  if (!flag) return false;
  slots_.release(r);
  return true;
}

Transport::Request MpiTransport::post_recv(int peer, int channel, void* dst, std::size_t bytes) {
  return post(false, peer, channel, dst, bytes);
}

bool MpiTransport::test_recv(Request r) {
  heartbeat();
  Slot& s = slots_.at(r, "MPI transport: test_recv");
  int flag = 0;
  MPI_Status status;
  const int rc = MPI_Test(&s.request, &flag, &status);
  if (rc != MPI_SUCCESS) {
    // Truncation: the message is longer than the receive. (status.MPI_ERROR is only set by the
    // multiple-completion calls: the return code is the error here.)
    const int code = rc;
    slots_.release(r);
    throw InputError(fmt::format(
        "rank {}: the message from peer {} on channel {} has more than {} bytes, expected {} ({}): the ranks "
        "disagree on the collective (count, dtype or algorithm)",
        rank_, s.peer, s.channel, s.bytes, s.bytes, mpi_error_string(code)));
  }
  if (!flag) return false;
  slots_.release(r);
  int got = 0;
  MPI_Get_count(&status, MPI_BYTE, &got);
  if (static_cast<std::size_t>(got) != s.bytes)
    throw InputError(fmt::format(
        "rank {}: the message from peer {} on channel {} has {} bytes, expected {}: the ranks disagree on the "
        "collective (count, dtype or algorithm)",
        rank_, s.peer, s.channel, got, s.bytes));
  return true;
}

void MpiTransport::wait(std::chrono::steady_clock::time_point /*deadline*/) {
  heartbeat();
  std::this_thread::yield();
}

void MpiTransport::flush() {
  slots_.for_each([this](Request r, Slot& s) {
    if (s.send && s.request != MPI_REQUEST_NULL) {
      check(MPI_Wait(&s.request, MPI_STATUS_IGNORE), "MPI_Wait (send)");
      slots_.release(r);
    }
  });
}

MpiRoundTransport::MpiRoundTransport(MPI_Comm comm, std::chrono::milliseconds timeout) : timeout_(timeout) {
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiRoundTransport::~MpiRoundTransport() {
  for (MPI_Request& r : requests_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
  MPI_Comm_free(&comm_);
}

void MpiRoundTransport::post(bool send, int peer, void* data, std::size_t bytes) {
  const char* what = send ? "send" : "receive";
  if (peer < 0 || peer >= size_ || peer == rank_ || bytes > static_cast<std::size_t>(INT32_MAX))
    throw InputError(fmt::format("mpi rounds: rank {}: {} of {} bytes, peer {} (0..{}, not itself)", rank_, what, bytes,
                                 peer, size_ - 1));
  requests_.push_back(MPI_REQUEST_NULL);
  peers_.push_back(peer);
  const int rc = send ? MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &requests_.back())
                      : MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &requests_.back());
  if (rc != MPI_SUCCESS)
    throw std::runtime_error(fmt::format("mpi rounds: rank {}: the {} with rank {} failed in MPI", rank_, what, peer));
}

void MpiRoundTransport::send(int peer, const void* src, std::size_t bytes) {
  post(true, peer, const_cast<void*>(src), bytes);
}

void MpiRoundTransport::recv(int peer, void* dst, std::size_t bytes) {
  post(false, peer, dst, bytes);
}

void MpiRoundTransport::end_round() {
  const int round = round_++;
  if (requests_.empty()) return;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    heartbeat();
    int done = 0;
    if (MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      throw InputError(fmt::format(
          "mpi rounds: rank {}: round {}: a transfer failed (a message of another size than expected?)", rank_, round));
    if (done) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::vector<int> waiting;
      for (std::size_t i = 0; i < requests_.size(); ++i)
        if (requests_[i] != MPI_REQUEST_NULL) waiting.push_back(peers_[i]);
      std::sort(waiting.begin(), waiting.end());
      waiting.erase(std::unique(waiting.begin(), waiting.end()), waiting.end());
      std::string list;
      for (int p : waiting) list += (list.empty() ? "" : ",") + std::to_string(p);
      throw PeerTimeout(
          fmt::format("rank {}: no progress for {} ms in round {}: transfers with rank(s) {} did not complete", rank_,
                      timeout_.count(), round, list),
          rank_, waiting.empty() ? -1 : waiting.front(), 0, 0);
    }
    std::this_thread::yield();
  }
  requests_.clear();
  peers_.clear();
}

}  // namespace topocoll::runtime
