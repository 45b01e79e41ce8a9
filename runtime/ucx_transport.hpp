// The UCX transport (issue 5, part 2): runtime::Transport over UCP's tag API, zero copy on
// topocoll's side, host memory.
//
//   start-up (collective over the MPI communicator it is given)
//     ucp context (tag feature) + one worker (thread mode single)
//     worker addresses: MPI_Allgather of the lengths, MPI_Allgatherv of the bytes
//     one endpoint per peer, UCP_ERR_HANDLING_MODE_PEER; the error callback records the failed
//     peer, and an operation waiting on it throws an error naming that rank
//   post_send(peer, ch, data, n)   ucp_tag_send_nbx from `data`, tag = (this rank << 32 | ch)
//   post_recv(peer, ch, dst, n)    ucp_tag_recv_nbx into `dst`, tag (peer << 32 | ch), full mask
//
// Two endpoints per peer. Peer failure handling costs the fast bulk path in UCX 1.13: a peer-mode
// endpoint may only use transports that can detect a dead peer (shared memory with its
// ERROR_HANDLING option, tcp), not CMA, so a large message is copied twice (into and out of the
// shared-memory FIFO) instead of once (process_vm_readv). Messages of at least bulk_bytes
// (UcxOptions) therefore go over a second endpoint without error handling, which may use CMA;
// their tag has bit 31 of the channel word set, so a receive (which knows its size) matches only
// messages of its own class, and FIFO order holds per class and endpoint. The peer-mode endpoint
// keeps detecting a failed peer (keepalive) for both: an operation waiting on that peer throws.
// (A message whose size is on the other side of bulk_bytes than its receive expects is then not
// matched at all: the receiver's executor reports it as a PeerTimeout, not as a size error.)
// The bulk endpoints are experimental and off by default (UcxOptions::bulk_bytes = 0): see there.
//   test_send / test_recv          ucp_worker_progress, then the request's status
//   wait(deadline)                 ucp_worker_progress; yields the core when nothing happened
//
// FIFO per (source, destination, channel): UCP matches tagged messages from one endpoint in the
// order they were sent, and the executor posts one receive per (peer, channel) at a time.
// A message of another size is an InputError (UCP reports a longer one as truncated, a shorter one
// by its length). Request slots are kept and reused: steady state allocates nothing; requests
// that complete at once (small eager messages) are not kept at all.
//
// Memory: host buffers. Whether this UCX build could move GPU memory (ucp_context_query's
// memory_types has UCS_MEMORY_TYPE_CUDA) is reported by memory_support(), once, by the caller.
#pragma once

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transport.hpp"

namespace topocoll::runtime {

struct UcxOptions {
  // Messages of this many bytes or more use the bulk endpoint (no error handling, CMA allowed);
  // 0: every message uses the peer-failure endpoint. Experimental, off by default: with 64 KiB,
  // dbt on 2 ranks at 4 MiB hung reproducibly (a send to the peer never completed) on UCX 1.13.1.
  std::size_t bulk_bytes = 0;
};

class UcxTransport final : public Transport {
 public:
  // Collective over `comm` (every rank constructs it). Throws std::runtime_error naming the UCX
  // call and status when UCX cannot start or reach a peer.
  explicit UcxTransport(MPI_Comm comm, const UcxOptions& options = {});
  // Collective too: waits (progressing UCX) until every rank is done, then closes the endpoints.
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override;
  bool test_send(Request r) override;
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override;
  bool test_recv(Request r) override;
  void wait(std::chrono::steady_clock::time_point deadline) override;
  void progress() override;  // ucp_worker_progress

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool cuda_memory() const { return cuda_memory_; }                  // the UCX build handles CUDA memory
  const std::string& memory_types() const { return memory_types_; }  // e.g. "host, cuda"
  // One line for a start-up banner, e.g. "GPU memory not supported by this UCX build (memory
  // types: host); UCX 1.13.1".
  std::string memory_support() const;

 private:
  struct Slot {
    void* request = nullptr;
    bool send = false;
    int peer = -1, channel = 0;
    std::size_t bytes = 0;
  };
  struct PeerHandler {  // the error callback's argument, one per peer
    UcxTransport* self = nullptr;
    int peer = -1;
  };
  static void on_peer_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  Request keep(void* request, bool send, int peer, int channel, std::size_t bytes);
  void check_peer(int peer, int channel, const char* what) const;
  [[noreturn]] void throw_failed(const Slot& s, ucs_status_t status, const char* what) const;
  void release(Request r);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> endpoints_;    // per peer, peer failure handling; null for this rank
  std::vector<ucp_ep_h> bulk_;         // per peer, no error handling (bulk_bytes and more)
  std::size_t bulk_bytes_ = 0;         // 0: no bulk endpoints
  std::vector<PeerHandler> handlers_;  // per peer, never reallocated after start-up
  std::vector<ucs_status_t> failed_;   // per peer: UCS_OK, or the status the error callback saw
  RequestSlots<Slot> slots_;
  bool cuda_memory_ = false;
  std::string memory_types_;
};

}  // namespace topocoll::runtime
