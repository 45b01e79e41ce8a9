// The job's communicator under MPI (issue 5, part 1): rank, size, the node of every rank (the
// MPI_COMM_TYPE_SHARED split) and barriers. Created after MPI_Init; owns duplicates of the
// communicator it is given, so nothing it does can match traffic of the caller's.
//
//   world ──dup──> comm_            all ranks: barriers, reductions of timings and error counts
//     └─split_type(SHARED)──> node_ ranks of this node: local rank, ranks per node
//         leaders (local rank 0) ──split──> node index, broadcast to the node
//
// The layout an algorithm needs comes from here: algo::uniform_layout(nodes(), ranks_per_node()),
// which numbers ranks node by node; a job whose ranks are not placed that way (or whose nodes
// hold different numbers of ranks) is an InputError naming what differs.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/ir/layout.hpp"
#include "runtime/faults.hpp"

namespace topocoll::runtime {

class Communicator {
 public:
  explicit Communicator(MPI_Comm world = MPI_COMM_WORLD);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int node() const { return node_index_; }  // this rank's node, 0 ... nodes()-1
  int nodes() const { return nodes_; }
  int local_rank() const { return local_rank_; }                // rank within its node
  int local_size() const { return local_size_; }                // ranks on this rank's node
  const std::vector<int>& node_of() const { return node_of_; }  // per rank
  MPI_Comm comm() const { return comm_; }                       // a private duplicate of the world

  // Ranks per node when every node holds the same number; -1 otherwise.
  int ranks_per_node() const { return uniform_ ? local_size_ : -1; }
  // uniform_layout(nodes, ranks per node); throws InputError when the job does not fit one
  // (different ranks per node, or ranks not numbered node by node).
  algo::Layout layout() const;

  // Bounds the communicator's own collectives (barrier, the reductions below): with a timeout,
  // each is a non-blocking MPI call waited for at most that long (runtime/faults.hpp), and a
  // JobTimeout names the ranks known to be gone. Without one (the default) they block in MPI.
  void set_timeout(std::chrono::milliseconds timeout, const PeerTable* peers = nullptr) {
    timeout_ = timeout;
    peers_ = peers;
  }

  // Runs between the tests of the bounded collectives (and makes the barrier a bounded one even
  // without a timeout): a transport's progress, so a rank waiting here still answers its peers.
  void set_progress(std::function<void()> progress) { progress_ = std::move(progress); }

  // What the job is doing, for the timeout messages of the bounded calls: "rank 2: barrier (ring
  // at 4194304 B): no progress for 3000 ms ...". Empty: none.
  void set_context(std::string context) { context_ = std::move(context); }

  void barrier() const;
  // Element-wise maximum / sum over all ranks, in place.
  void max_over_ranks(std::vector<double>& v) const;
  std::uint64_t sum_over_ranks(std::uint64_t v) const;

 private:
  std::chrono::milliseconds bound() const;
  std::string label(const char* what) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_index_ = 0, nodes_ = 1;
  bool uniform_ = true;
  std::chrono::milliseconds timeout_{0};
  const PeerTable* peers_ = nullptr;
  std::function<void()> progress_;
  std::string context_;
  std::vector<int> node_of_;
};

}  // namespace topocoll::runtime
