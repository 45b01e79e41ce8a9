#include "runtime/mpi_transport.hpp"

#include <climits>
#include <cstring>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "common/errors.hpp"

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
  recvs_.resize(static_cast<std::size_t>(size_));
}

MpiTransport::~MpiTransport() {
  if (std::uncaught_exceptions() > 0) {
    // Unwinding towards an abort of the job: a peer may be gone, so waiting could hang. MPI may
    // still read the staging buffers: leave them (and the communicator) alive.
    new std::vector<std::vector<std::byte>>(std::move(buffers_));
    return;
  }
  // After an error receives may still be posted: cancel them; sends complete (peers drain them or
  // the job is being torn down anyway).
  for (auto& per_peer : recvs_)
    for (PendingRecv& r : per_peer)
      if (r.active) {
        MPI_Cancel(&r.request);
        MPI_Wait(&r.request, MPI_STATUS_IGNORE);
      }
  try {
    flush();
  } catch (...) {
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::size_t MpiTransport::acquire(std::size_t bytes) {
  // Best fit among the free buffers; else grow the largest free one; else a new buffer.
  std::size_t best = SIZE_MAX, largest = SIZE_MAX;
  for (std::size_t i = 0; i < free_.size(); ++i) {
    const std::size_t cap = buffers_[free_[i]].size();
    if (cap >= bytes && (best == SIZE_MAX || cap < buffers_[free_[best]].size())) best = i;
    if (largest == SIZE_MAX || cap > buffers_[free_[largest]].size()) largest = i;
  }
  const std::size_t pick = best != SIZE_MAX ? best : largest;
  if (pick != SIZE_MAX) {
    const std::size_t index = free_[pick];
    free_[pick] = free_.back();
    free_.pop_back();
    if (buffers_[index].size() < bytes) buffers_[index].resize(bytes);
    return index;
  }
  buffers_.emplace_back(std::max<std::size_t>(bytes, 64));
  return buffers_.size() - 1;
}

void MpiTransport::release(std::size_t buffer) { free_.push_back(buffer); }

void MpiTransport::progress_sends() {
  if (send_requests_.empty()) return;
  completed_.resize(send_requests_.size());
  int done = 0;
  check(MPI_Testsome(static_cast<int>(send_requests_.size()), send_requests_.data(), &done, completed_.data(), MPI_STATUSES_IGNORE),
        "MPI_Testsome (sends)");
  if (done <= 0) return;  // 0, or MPI_UNDEFINED when no request is active
  for (int i = 0; i < done; ++i) release(send_buffers_[static_cast<std::size_t>(completed_[static_cast<std::size_t>(i)])]);
  // Completed requests are now MPI_REQUEST_NULL: compact both arrays.
  std::size_t w = 0;
  for (std::size_t r = 0; r < send_requests_.size(); ++r)
    if (send_requests_[r] != MPI_REQUEST_NULL) {
      send_requests_[w] = send_requests_[r];
      send_buffers_[w] = send_buffers_[r];
      ++w;
    }
  send_requests_.resize(w);
  send_buffers_.resize(w);
}

void MpiTransport::post_send(int peer, int channel, const void* data, std::size_t bytes) {
  if (peer < 0 || peer >= size_) throw InputError(fmt::format("send to peer {}: the job has {} ranks", peer, size_));
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw InputError(fmt::format("a message of {} bytes: the MPI transport sends at most {} bytes at once", bytes, INT_MAX));
  progress_sends();
  const std::size_t buffer = acquire(bytes);
  if (bytes > 0) std::memcpy(buffers_[buffer].data(), data, bytes);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Isend(buffers_[buffer].data(), static_cast<int>(bytes), MPI_BYTE, peer, channel, comm_, &request), "MPI_Isend");
  send_requests_.push_back(request);
  send_buffers_.push_back(buffer);
}

MpiTransport::PendingRecv& MpiTransport::pending(int peer, int channel) {
  if (peer < 0 || peer >= size_) throw InputError(fmt::format("receive from peer {}: the job has {} ranks", peer, size_));
  if (channel < 0) throw InputError(fmt::format("receive on channel {}: expected >= 0", channel));
  auto& per_peer = recvs_[static_cast<std::size_t>(peer)];
  if (per_peer.size() <= static_cast<std::size_t>(channel)) per_peer.resize(static_cast<std::size_t>(channel) + 1);
  return per_peer[static_cast<std::size_t>(channel)];
}

bool MpiTransport::try_recv(int peer, int channel, std::size_t bytes, const std::function<void(const void* data)>& deliver) {
  PendingRecv& r = pending(peer, channel);
  if (!r.active) {
    if (bytes > static_cast<std::size_t>(INT_MAX))
      throw InputError(fmt::format("a message of {} bytes: the MPI transport receives at most {} bytes at once", bytes, INT_MAX));
    r.buffer = acquire(bytes);
    r.bytes = bytes;
    // One byte more than expected, so a longer message shows as a wrong count, not a truncation.
    if (buffers_[r.buffer].size() < bytes + 1) buffers_[r.buffer].resize(bytes + 1);
    check(MPI_Irecv(buffers_[r.buffer].data(), static_cast<int>(bytes + 1), MPI_BYTE, peer, channel, comm_, &r.request), "MPI_Irecv");
    r.active = true;
  } else if (r.bytes != bytes) {
    throw InputError(fmt::format("receive from peer {} on channel {}: {} bytes expected, but {} bytes were asked before", peer, channel,
                                 bytes, r.bytes));
  }
  int flag = 0;
  MPI_Status status;
  const int rc = MPI_Test(&r.request, &flag, &status);
  if (rc != MPI_SUCCESS) {
    r.active = false;
    release(r.buffer);
    throw InputError(fmt::format("receive from peer {} on channel {} ({} bytes): {}", peer, channel, bytes, mpi_error_string(rc)));
  }
  if (!flag) {
    progress_sends();
    return false;
  }
  r.active = false;
  int got = 0;
  MPI_Get_count(&status, MPI_BYTE, &got);
  if (static_cast<std::size_t>(got) != bytes) {
    release(r.buffer);
    throw InputError(fmt::format("rank {}: the message from peer {} on channel {} has {}{} bytes, expected {}: the ranks disagree on the "
                                 "collective (count, dtype or algorithm)",
                                 rank_, peer, channel, static_cast<std::size_t>(got) > bytes ? "more than " : "",
                                 static_cast<std::size_t>(got) > bytes ? bytes : static_cast<std::size_t>(got), bytes));
  }
  try {
    deliver(buffers_[r.buffer].data());
  } catch (...) {
    release(r.buffer);
    throw;
  }
  release(r.buffer);
  return true;
}

void MpiTransport::wait(std::chrono::steady_clock::time_point /*deadline*/) {
  progress_sends();
  std::this_thread::yield();
}

void MpiTransport::flush() {
  if (send_requests_.empty()) return;
  check(MPI_Waitall(static_cast<int>(send_requests_.size()), send_requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall (sends)");
  for (std::size_t b : send_buffers_) release(b);
  send_requests_.clear();
  send_buffers_.clear();
}

}  // namespace topocoll::runtime
