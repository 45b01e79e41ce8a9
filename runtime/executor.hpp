// The executor: runs one rank's program of a Schedule on real buffers over a Transport, under the
// execution contract of algorithms/ir/schedule.hpp.
//
//   Plan (bind once per schedule and rank)       Plan::run (many times, on given buffers)
//   ──────────────────────────────────────       ────────────────────────────────────────
//   program(rank) fetched, every op checked     round-robin over channels: each channel runs its
//   (algo::ProgramIndex: peer, channel, chunk   ops in order until it finishes or its next op is
//   bounds, read-only input, sizes), chunks     not ready (a receive not arrived, a write into a
//   resolved to (buffer, byte offset), ops      region an unfinished send still reads, a full
//   split per channel, one receive staging      window of sends); pointer = base + offset per run.
//   slice per channel                           No channel progresses for progress_timeout ->
//                                               PeerTimeout. At the end: wait for every send.
//
// Memory. Buffers and staging live in the plan's MemorySpace: host memory by default (memmove and
// the CPU reducer), or a device's (copies and reductions enqueued on the rank's stream; its
// transport completes in stream order, so a device send returns kDone and nothing is held back).
//
// Zero copy. A send is posted straight from its source chunk and a receive straight into its
// destination chunk; a receive-reduce receives into its channel's staging slice (sized in setup to
// the channel's largest receive) and reduces from there. Because the transport may read a send's
// source until the send completes (contract rule 2: "holds back later writes"), the executor
// keeps the rank's unfinished sends in a window and the write of an op into a region overlapping
// one of them (recv, recv_reduce, copy, reduce) waits until that send has completed. The window is
// a performance knob, not a limit: once kSendWindow sends are unfinished, a send first tests them
// (retiring the completed ones), then is posted whatever the count; the window has room for every
// send of the program (sized in setup), so any schedule the verifier accepts runs, e.g. 65 sends
// on one channel ahead of the receives their peer posts after its own 65. Receives are posted at
// once (a plain receive whose destination is still being sent lands in the staging slice): the
// peer may need our receive to finish its own send, as two ranks exchanging one region do.
//
// Push (runtime/push_plan.hpp). With a transport that pushes (Transport::pushes: the shm one), a
// reducing receive read in place also writes its result into the destinations of the sends that
// the bind-time analysis fused into it and the transport finds ready (push_target), in the same
// pass; those sends then post only their descriptor when their turn comes. Every run is announced
// (begin_run) and each channel's progress published (note_progress), so that peers know when a
// destination is free.
//
// Buffers and in-place calls. The executor reads and writes exactly the pointers it is given; the
// caller expresses NCCL's in-place aliasing through them (algo::in_place_storage in
// algorithms/ir/program_index.hpp, which the verifier uses):
//   allreduce, broadcast, reduce   input == output
//   reduce_scatter                 output == input + rank * count elements
//   allgather                      input == output + rank * count elements
// A copy whose source and destination overlap has memmove semantics (the same memory: a no-op);
// a local reduce whose source partially overlaps its destination reduces from a staged copy.
//
// Avg. The schedule reduces with runtime::reduce(..., Avg), which accumulates as a sum; when the
// program has finished, finish_avg divides the output by the rank count for the collectives that
// reduce: allreduce (every rank), reduce_scatter (every rank's block) and reduce (the root only;
// other ranks' outputs are unspecified). Allgather and broadcast move data without reducing, so
// avg leaves their output as it is.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "common/errors.hpp"
#include "runtime/bound_program.hpp"
#include "runtime/memory_space.hpp"
#include "runtime/push_plan.hpp"
#include "runtime/transport.hpp"

namespace topocoll::runtime {

struct Buffers {
  void* input = nullptr;
  void* output = nullptr;
  void* scratch = nullptr;  // scratch_count() elements, owned by the caller
};

struct ExecOptions {
  std::chrono::milliseconds progress_timeout{60000};  // no channel progresses this long: PeerTimeout
  // Stalled shorter than this, the executor polls the transport without calling Transport::wait
  // (which may yield the core: a rank that yields while its peer's reply is microseconds away can
  // lose the core for a scheduler slice, milliseconds, when other processes want it).
  std::chrono::microseconds spin{50};

  // The defaults, with TOPOCOLL_TIMEOUT (seconds, > 0; e.g. 30 or 2.5) for progress_timeout when
  // set. Throws InputError naming the value when it is not a positive number.
  static ExecOptions from_environment();
};

// Whether a plan runs switch ops (contract rule 11) through its transport (Transport::
// runs_switch_ops: the in-process one) or refuses their schedules when bound (MPI, UCX, devices).
enum class SwitchOps : std::uint8_t { Refuse, Run };

// One rank's program of a schedule, bound once and run many times (style rule 4: bind in setup,
// execute in run). The plan copies what it needs from the schedule; the schedule may go away.
class Plan {
 public:
  // Unfinished sends per rank beyond which a send first retires the completed ones (a cost
  // knob: it bounds the scans, never the count; see above).
  static constexpr std::size_t kSendWindow = 64;

  // Throws InputError for a rank that is not one of the schedule's, ScheduleError (ProgramIndex's
  // message) for a program that does not fit the schedule's shape (bad peer, channel or chunk, a
  // write to the input, a copy or reduce of different sizes). The buffers given to run() live in `memory`
  // (runtime/memory_space.hpp), which does the plan's copies, reductions and staging; it must
  // outlive the plan. A schedule with switch groups is an InputError unless `switch_ops` is Run
  // (and the transport given to run() then runs them).
  explicit Plan(const algo::Schedule& s, int rank, MemorySpace& memory = host_memory(),
                SwitchOps switch_ops = SwitchOps::Refuse);

  // Runs the program on `b` over `t` and returns when every channel has finished and every send
  // has completed. Throws InputError for a null buffer that a chunk needs or a message of the
  // wrong size, PeerTimeout when stalled; exceptions of the transport pass through. Allocates
  // nothing after the first run (the staging copy of a partially overlapping local reduce is
  // sized on first use).
  void run(const Buffers& b, Transport& t, const ExecOptions& o = {});

  // The same run, non-blocking (run() is start() then wait()): start() checks the buffers and
  // posts nothing yet; each test() makes one pass over the channels (posting, testing and
  // completing whatever is ready, never waiting) and returns true once every channel has finished
  // and every send has completed (Avg divided); wait() blocks until then, as run() does. Between
  // start() and the end, the caller must not touch the buffers nor use the transport, and the
  // plan, the buffers and the transport must stay alive; progress happens only inside test() and
  // wait() (a caller overlapping compute calls test() from its loop, or hands the plan to a
  // ProgressThread, runtime/progress_thread.hpp). PeerTimeout when no pass completed anything for
  // progress_timeout, as run(); starting a plan whose run is unfinished is an InputError. After
  // an exception the run is over and the plan may be started again.
  void start(const Buffers& b, Transport& t, const ExecOptions& o = {});
  bool test();
  void wait();
  bool running() const { return running_; }

  int rank() const { return rank_; }
  const std::string& name() const { return name_; }

 private:
  struct Channel {
    std::vector<std::uint32_t> ops;  // indices into ops_, in program order
    std::size_t staging_offset = 0;  // its receive slice in recv_staging_ (64-byte aligned)
    // Run state.
    std::size_t next = 0;
    bool posted = false;
    bool staged = false;  // the posted receive lands in the staging slice, not in place
    Transport::Request request = Transport::kDone;
    int blocked_on = -1;  // the peer of the send the current op waits for, or -1
    bool done() const { return next == ops.size(); }
  };
  struct InFlight {
    const std::byte* begin = nullptr;
    const std::byte* end = nullptr;
    Transport::Request request = Transport::kDone;
    int peer = -1, channel = 0;
    std::uint32_t op = 0;
  };

  bool advance();
  bool advance_once();
  bool finish_if_done();
  [[noreturn]] void stalled();
  bool step(Channel& ch, std::uint32_t index, Transport& t);
  bool reduce_in_place(Channel& ch, std::uint32_t index, const std::byte* own, Transport& t);
  std::size_t collect_pushes(std::uint32_t index, Transport& t);
  bool clear_to_write(Channel& ch, const std::byte* dst, std::size_t bytes, Transport& t);
  void retire_sends(Transport& t);
  std::byte* ptr(std::uint8_t buffer, std::size_t offset) const { return base_[buffer] + offset; }
  std::string where(std::size_t index) const;
  [[noreturn]] void throw_timeout(const ExecOptions& o) const;
  [[noreturn]] void throw_send_timeout(const ExecOptions& o) const;

  algo::CollectiveArgs args_;
  std::string name_;
  int rank_ = 0;
  std::size_t elem_ = 1;
  algo::Program program_;  // for error messages
  std::vector<BoundOp> ops_;
  std::vector<SwitchMember> switch_of_;  // per op (switch ops only; empty without switch groups)
  std::vector<Channel> channels_;
  BufferNeeds needs_;
  MemorySpace* memory_ = nullptr;
  SpaceBuffer recv_staging_;      // every channel's receive slice
  SpaceBuffer reduce_staging_;    // partially overlapping local reduces, own operands (first use)
  std::byte* base_[4] = {};       // set per run; [3]: zero-element chunks
  std::vector<InFlight> window_;  // capacity: every send of the program (no allocation in run)
  // Push (runtime/push_plan.hpp): per op, out of place [0] and in place [1]; the run's table (null:
  // no push this run), and the targets of the fused step in progress (capacity: the longest chain).
  std::vector<PushTarget> push_[2];
  std::vector<std::uint32_t> fused_begin_[2], fused_[2];  // per reducing receive: its candidates
  int push_run_ = -1;                                     // the run's placement; -1: no push
  std::vector<std::byte*> pushed_to_;                     // per send: where it was written this run
  std::uint64_t fingerprint_ = 0;                         // of the plan (Transport::begin_run)
  std::vector<std::byte*> pushes_;
  static constexpr std::size_t kPushTile = 16 * 1024;
  SpaceBuffer push_tile_;  // the fused step's reduced tile
  bool stream_ = false;    // the run's buffers exceed the last-level cache: stream pushes out
  std::size_t in_flight_ = 0;
  // The run in progress (start() .. the end).
  bool running_ = false;
  std::size_t unfinished_ = 0;  // channels not done
  Transport* transport_ = nullptr;
  ExecOptions options_;
  std::chrono::steady_clock::time_point last_progress_;
};

// Avg's division at the end of a run (see above): on the ranks whose output is a reduction, the
// output divided by the rank count in `memory`; nothing for other ops.
void finish_avg(const algo::CollectiveArgs& a, int rank, void* output, MemorySpace& memory);

// Runs rank `rank`'s program of `s` on `b` over `t` and returns when every channel has finished:
// Plan(s, rank).run(b, t, o), for callers that run a schedule once; switch ops run when the
// transport runs them (Transport::runs_switch_ops), else the schedule is refused.
void execute(const algo::Schedule& s, int rank, const Buffers& b, Transport& t, const ExecOptions& o = {});

}  // namespace topocoll::runtime
