// The error tiers (style rule 10). Every error the project throws is a topocoll::Error:
//  - InputError: the user gave something wrong (a flag, a file, a topology). The message names
//    what was given and what was expected; the command line prints it on one line and exits
//    with status 2.
//  - ScheduleError: a schedule breaks the execution contract (algorithms/ir/schedule.hpp): a bad
//    channel or peer, a chunk outside its buffer, a write to the input, transfers that do not
//    match, a schedule that never completes. The message names rank, channel and operation
//    (algorithms/ir/program_index.hpp); the command line prints it on one line and exits with
//    status 1, as `topocoll verify` does for a schedule it proves wrong (not 2: a generated
//    schedule that breaks the contract is a generator bug, not bad input).
//  - RuntimeFailure: a run failed for a reason outside the schedule and the input: a peer died
//    or made no progress (runtime::PeerTimeout, runtime::JobTimeout), the job was aborted
//    (runtime::Aborted), CUDA or NCCL failed. Exit status 1.
//  - InternalError / TOPOCOLL_ASSERT: a broken internal invariant, with operands and file:line.
//    A bug, not input. Exit status 1.
#pragma once

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

namespace topocoll {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what) {}
};

// A schedule that breaks the execution contract. rank, channel and op_index locate the
// operation when there is one (-1 / kNoOp otherwise); the message always names them.
class ScheduleError : public Error {
 public:
  static constexpr std::size_t kNoOp = static_cast<std::size_t>(-1);
  explicit ScheduleError(const std::string& what, int rank = -1, int channel = -1, std::size_t op_index = kNoOp)
      : Error(what), rank_(rank), channel_(channel), op_index_(op_index) {}
  int rank() const { return rank_; }
  int channel() const { return channel_; }
  std::size_t op_index() const { return op_index_; }  // index in the rank's program

 private:
  int rank_, channel_;
  std::size_t op_index_;
};

class RuntimeFailure : public Error {
 public:
  explicit RuntimeFailure(const std::string& what) : Error(what) {}
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what) : Error(what) {}
};

[[noreturn]] inline void assertion_failed(const char* expr, const std::string& detail, const char* file, int line) {
  std::ostringstream os;
  os << "internal error: assertion `" << expr << "` failed";
  if (!detail.empty()) os << " (" << detail << ")";
  os << " at " << file << ":" << line;
  throw InternalError(os.str());
}

}  // namespace topocoll

#define TOPOCOLL_ASSERT(expr, detail)                                               \
  do {                                                                              \
    if (!(expr)) ::topocoll::assertion_failed(#expr, (detail), __FILE__, __LINE__); \
  } while (0)
