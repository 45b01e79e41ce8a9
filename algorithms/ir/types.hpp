// Collective arguments shared by the schedule IR, the verifier, the simulator and the runtime.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace topocoll::algo {

enum class Collective : std::uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AllToAll };
inline constexpr std::array kAllCollectives{Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                            Collective::Broadcast, Collective::Reduce,    Collective::AllToAll};
enum class DataType : std::uint8_t { Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, BFloat16, Float32, Float64 };
enum class ReduceOp : std::uint8_t { Sum, Prod, Min, Max, Avg };

inline constexpr std::array kAllDataTypes{DataType::Int8,    DataType::Uint8,  DataType::Int32,   DataType::Uint32,
                                          DataType::Int64,   DataType::Uint64, DataType::Float16, DataType::BFloat16,
                                          DataType::Float32, DataType::Float64};
inline constexpr std::array kAllOps{ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};

std::string_view to_string(Collective c);
std::string_view to_string(DataType t);
std::string_view to_string(ReduceOp op);
// Parsers accept the names above and nccl-tests' spellings (float, half, bfloat16, double,
// int8 ... uint64; sum, prod, min, max, avg). Unknown names throw InputError listing the valid.
Collective parse_collective(std::string_view s);
DataType parse_dtype(std::string_view s);
ReduceOp parse_op(std::string_view s);
std::size_t size_of(DataType t);
// Whether a collective reduces (allreduce, reduce_scatter, reduce: the op applies) and whether it
// has a root (broadcast, reduce).
inline bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}
inline bool rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce;
}

// What a collective call is. Buffer sizes in elements, per rank:
//   allreduce       input count        output count
//   reduce_scatter  input count * p    output count        (count = NCCL's recvcount)
//   allgather       input count        output count * p    (count = NCCL's sendcount)
//   broadcast       input count (root) output count
//   reduce          input count        output count (root's is the result)
//   alltoall        input count * p    output count * p    (count = what each rank sends each peer:
//                                                           output block j of rank r = input block r of rank j)
struct CollectiveArgs {
  Collective collective = Collective::AllReduce;
  std::uint64_t count = 0;
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int ranks = 1;
  int root = 0;

  static CollectiveArgs allreduce(std::uint64_t count, DataType dtype, ReduceOp op, int ranks) {
    CollectiveArgs a;
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    a.ranks = ranks;
    return a;
  }

  // Exact or refused: count x ranks that does not fit in 64 bits throws InputError (a Schedule
  // refuses such arguments when it is built, naming the field).
  std::uint64_t input_count() const {
    return collective == Collective::ReduceScatter || collective == Collective::AllToAll ? count_times_ranks() : count;
  }
  std::uint64_t output_count() const {
    return collective == Collective::AllGather || collective == Collective::AllToAll ? count_times_ranks() : count;
  }
  std::uint64_t count_times_ranks() const;
};

// nccl-tests' view of a call (src/all_gather.cu, reduce_scatter.cu, alltoall.cu ...: *GetCollByteCount):
// a run of `-b SIZE` bytes has SIZE / sizeof(dtype) elements in all; allgather, reduce-scatter and
// all-to-all split them over the ranks (the per-rank count is SIZE / sizeof / p, rounded down),
// allreduce, broadcast and reduce take them whole. nccl_tests_args gives the CollectiveArgs of
// such a run; nccl_tests_bytes the size nccl-tests prints and divides by the time for algbw (the
// larger buffer of a rank: max(send, recv) bytes); nccl_tests_name its binary (all_reduce_perf ...).
CollectiveArgs nccl_tests_args(Collective c, std::uint64_t bytes, DataType dtype, ReduceOp op, int ranks, int root = 0);
std::uint64_t nccl_tests_bytes(const CollectiveArgs& a);
std::string_view nccl_tests_name(Collective c);

// Tuning knobs of a generator (style rule 7: a policy struct, never literals in a loop).
struct Tuning {
  int channels = 2;                      // concurrent channels; each carries 1/channels of the data
  std::uint64_t slice_bytes = 1u << 20;  // pipelining unit: a chunk is cut into slices of this size
  int pipeline_depth = 4;                // slices in flight per channel (runtime; informs the cost model)
};

// The i-th of `parts` nearly equal pieces of `n` elements: the first n % parts pieces get one more.
struct Range {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
  std::uint64_t end() const { return offset + count; }
};
inline Range split(Range whole, std::uint64_t parts, std::uint64_t i) {
  const std::uint64_t base = whole.count / parts, extra = whole.count % parts;
  return {whole.offset + i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

}  // namespace topocoll::algo
