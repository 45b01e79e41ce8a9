// Faults of a job under MPI: a dead, stopped or slowed peer and ranks that disagree end the job
// with an error that names them, never with a hang or a wrong answer.
//
//   what goes wrong                     who notices                      what they say
//   ───────────────────────────────     ─────────────────────────────    ─────────────────────────────
//   ranks given different input, or     agree(), every rank, before any  "ranks disagree on the command
//   one rank's input is bad             data moves (topocoll-bench: the  line: --topology: rank 0: ...;
//                                       command line, then the job's     rank 1: pcie-8gpu", "input
//                                       topology and layout)             error on rank 1 (of 2; ...)"
//   a rank dies (killed, crashed),      every rank that waits on it,     "rank 1 (pid 4242 on node7) is
//   is stopped (SIGSTOP) or does not    directly or through a chain:     no longer running" / "is
//   come back to a wait (slowed)        the executor's progress timeout  stopped" / "has not waited in
//                                       or a bounded wait (below)        topocoll for 3.1 s" (ranks of
//                                                                        this host: the peer board)
//   ranks pass different calls          check_same_call, before the      "ranks disagree on the call:
//   (count, type, op, algorithm, ...)   collective runs, on every rank   rank 0: 1000 float sum ring,
//                                                                         rank 1: 1001 float sum ring"
//   and without that check              the transport: a message of the  InputError naming both sizes;
//                                       wrong size is an error           the others time out
//
// Every MPI collective the runtime calls itself (barriers, the timing reductions, the call check,
// the agreement, the bench's mpi baseline) goes through wait_bounded(): a non-blocking MPI call, tested until done or
// until the progress timeout, so a rank that died between two collectives cannot hang the others in MPI either.
//
// The launcher matters: by default mpirun (Open MPI) kills the whole job as soon as one process
// dies, and itself names the rank that died. With `mpirun --enable-recovery` (or a launcher that
// does not kill), the surviving ranks run into the timeouts above and report on their own: each
// prints its error and exits non-zero (no MPI_Finalize, no MPI_Abort), within the timeout.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "common/errors.hpp"

namespace topocoll::runtime {

// What a rank's slot on its host's board says about it (below).
enum class PeerState : std::int32_t { Unknown = 0, Active = 1, Failed = 2, Done = 3 };

// The process behind every rank: gathered once after MPI_Init (a collective call). Ranks on one
// host also share a board in shared memory: per rank its state and the time it last waited in
// topocoll (heartbeat(): every wait loop of the runtime beats), so that a rank whose wait timed
// out can tell its host's peers apart: gone, stopped, not waiting (slowed or blocked elsewhere),
// or waiting like itself.
class PeerTable {
 public:
  PeerTable() = default;
  // `timeout`: the progress timeout; bounds the setup's own barrier, and a local rank that has not
  // beaten for half of it is reported as making no progress.
  static PeerTable gather(MPI_Comm comm, std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

  int size() const { return static_cast<int>(pids_.size()); }
  // Ranks whose process is known to be gone: those on this host whose pid no longer exists (or is
  // a zombie), unless they left after an error of their own. Other hosts are never listed.
  std::vector<int> gone() const;
  // One clause per rank of this host that is the likely cause of a stall, joined by "; ":
  //   "rank 1 (pid 4242 on node7) is no longer running (killed or crashed)"
  //   "rank 1 (pid 4242 on node7) is stopped (SIGSTOP, or held by a debugger)"
  //   "rank 1 (pid 4242 on node7) has not waited in topocoll for 3.1 s (slowed, or blocked outside
  //    topocoll)"
  // then "rank 2 (pid ...) already left after an error of its own" for ranks that gave up first.
  // Empty when nothing is known.
  std::string describe_gone() const;

 private:
  struct Board;
  int rank_ = 0;
  std::chrono::milliseconds quiet_{30000};
  std::vector<std::int64_t> pids_;
  std::vector<std::string> hosts_;
  std::shared_ptr<Board> board_;
};

// This rank waits in topocoll (a wait loop of the runtime): its slot on the board says when.
// Cheap (a clock read and a store); does nothing before PeerTable::gather.
void heartbeat();
// This rank's state on the board: Failed just before it exits after an error, Done at the end.
void set_own_state(PeerState s);

// The progress timeout expired in one of the runtime's own MPI calls.
class JobTimeout : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// An input error every rank raises alike, having agreed on it (agree, check_same_call): each rank
// may finish MPI cleanly; rank 0 reports it.
class AgreedInputError : public InputError {
 public:
  using InputError::InputError;
};

// Tests `request` until it completes or `timeout` passes; then throws JobTimeout naming `what`
// and, when `peers` is given, the ranks known to be gone. `progress`, when given, runs between
// tests (a transport's own progress: see Transport::progress).
void wait_bounded(MPI_Request& request, std::chrono::milliseconds timeout, const std::string& what,
                  const PeerTable* peers = nullptr, const std::function<void()>& progress = {});

// The agreement step, before any data moves: each rank brings the fields that must match on every
// rank (name, value; the same names in the same order), or the input error that stopped it. One
// bounded exchange of digests (and of the fields themselves only when they differ). When any rank
// brought an input error, or two ranks differ in a field, every rank throws the same
// AgreedInputError:
//   "input error on rank 1 (of 2; the others' input was valid): --topology pcie-8gpu: ..."
//   "ranks disagree on the command line: --maxbytes: ranks 0: 4096; ranks 1: 8192: expected the
//    same on every rank"
// `what` names the subject ("the command line", "the job's topology").
struct Agreement {
  std::vector<std::pair<std::string, std::string>> fields;
  std::string input_error;  // non-empty: this rank's own input was bad
};
void agree(MPI_Comm comm, const Agreement& mine, const std::string& what, std::chrono::milliseconds timeout,
           const PeerTable* peers = nullptr);

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

// Testing hooks (tools/fault_test.sh), each "RANK:MS[:...]": rank RANK acts MS milliseconds
// after this call, wherever it is (inside a collective, normally).
//   TOPOCOLL_TEST_KILL="1:1500"        rank 1 raises SIGKILL (a crash)
//   TOPOCOLL_TEST_KILL="1:1500:STOP"   rank 1 raises SIGSTOP (stopped until SIGCONT / SIGKILL)
//   TOPOCOLL_TEST_STALL="1:1500:6000"  rank 1's main thread sleeps 6000 ms (a slowed rank: a
//                                      signal handler sleeps wherever the thread was)
// Each prints "topocoll test fault: rank R: SIG at EPOCH" on stderr as it acts. Returns true when
// armed on this rank. Unset: does nothing.
bool arm_test_faults(int rank);

}  // namespace topocoll::runtime
