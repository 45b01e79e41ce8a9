// Faults of a job under MPI (issue 5, part 2): a dead peer and ranks that disagree about a call
// end the collective with an error that names them, never with a hang or a wrong answer.
//
//   what goes wrong                     who notices                      what they say
//   ───────────────────────────────     ─────────────────────────────    ─────────────────────────────
//   a rank dies (killed, crashed)       every rank that waits on it,     "rank 1 (pid 4242 on node7) is
//                                       directly or through a chain:     no longer running"
//                                       the executor's progress timeout  (ranks on this rank's host are
//                                       or a bounded wait (below)        checked; others are "unknown")
//   ranks pass different calls          check_same_call, before the      "ranks disagree on the call:
//   (count, type, op, algorithm, ...)   collective runs, on every rank   rank 0: 1000 float sum ring,
//                                                                         rank 1: 1001 float sum ring"
//   and without that check              the transport: a message of the  InputError naming both sizes;
//                                       wrong size is an error           the others time out
//
// Every MPI collective the runtime calls itself (barriers, the timing reductions, the call check)
// goes through wait_bounded(): a non-blocking MPI call, tested until done or until the progress
// timeout, so a rank that died between two collectives cannot hang the others in MPI either.
//
// The launcher matters: by default mpirun (Open MPI) kills the whole job as soon as one process
// dies, and itself names the rank that died. With `mpirun --enable-recovery` (or a launcher that
// does not kill), the surviving ranks run into the timeouts above and report on their own.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/types.hpp"
#include "common/errors.hpp"

namespace topocoll::runtime {

// The process behind every rank: gathered once after MPI_Init (a collective call).
class PeerTable {
 public:
  PeerTable() = default;
  static PeerTable gather(MPI_Comm comm);

  int size() const { return static_cast<int>(pids_.size()); }
  // Ranks whose process is known to be gone: those on this host whose pid no longer exists.
  // Ranks on other hosts cannot be checked from here and are never listed.
  std::vector<int> gone() const;
  // "rank 1 (pid 4242 on node7) is no longer running" for each gone rank, joined by "; ";
  // empty when none is known to be gone.
  std::string describe_gone() const;

 private:
  int rank_ = 0;
  std::vector<std::int64_t> pids_;
  std::vector<std::string> hosts_;
};

// The progress timeout expired in one of the runtime's own MPI calls.
class JobTimeout : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// Tests `request` until it completes or `timeout` passes; then throws JobTimeout naming `what`
// and, when `peers` is given, the ranks known to be gone. `progress`, when given, runs between
// tests (a transport's own progress: see Transport::progress).
void wait_bounded(MPI_Request& request, std::chrono::milliseconds timeout, const std::string& what,
                  const PeerTable* peers = nullptr, const std::function<void()>& progress = {});

// What every rank must agree on for one collective call.
struct CallSignature {
  algo::CollectiveArgs args;
  std::string algorithm;  // registered name, or a baseline such as "mpi"
  int channels = 0;
  std::uint64_t slice_bytes = 0;
};
std::string describe(const CallSignature& s);  // "1001 float sum ring (2 channels, 1048576 B slices)"

// Collective over `comm`: every rank contributes its signature; when any two differ, every rank
// throws the same InputError listing the distinct signatures and the ranks that passed each.
void check_same_call(MPI_Comm comm, const CallSignature& mine, std::chrono::milliseconds timeout,
                     const PeerTable* peers = nullptr, const std::function<void()>& progress = {});

// Testing hook (tools/fault_test.sh): TOPOCOLL_TEST_KILL="RANK:MS" makes rank RANK kill itself
// with SIGKILL MS milliseconds after this call, wherever it is (inside a collective, normally).
// Returns true when armed on this rank. Unset: does nothing.
bool arm_test_kill(int rank);

}  // namespace topocoll::runtime
