// Collective arguments shared by the schedule IR, the verifier, the simulator and the runtime.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace topocoll::algo {

enum class Collective : std::uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AllToAll, AllToAllV };
inline constexpr std::array kAllCollectives{Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                            Collective::Broadcast, Collective::Reduce,    Collective::AllToAll,
                                            Collective::AllToAllV};
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
//   alltoallv       sent(r)            received(r)         (a size matrix, AllToAllVSizes: rank i sends
//                                                           count(i, j) to rank j; packed blocks, MPI_Alltoallv
//                                                           with displacements the prefix sums; `count` unused)
// The size matrix of an all-to-allv: count(i, j) elements go from rank i to rank j. Rank i's input
// holds its blocks for j = 0 .. p-1 back to back (send_displ(i, j) = the sum of count(i, k), k < j),
// rank j's output holds the blocks from i = 0 .. p-1 back to back (recv_displ(j, i) = the sum of
// count(k, j), k < i): MPI_Alltoallv with packed displacements. Immutable; shared by the copies of
// a CollectiveArgs.
class AllToAllVSizes {
 public:
  // Row-major counts[src * ranks + dst]. InputError naming the problem: ranks outside
  // 1..kMaxMatrixRanks, counts.size() != ranks^2, a buffer of 2^60 bytes or more at 8 bytes per element.
  static std::shared_ptr<const AllToAllVSizes> make(int ranks, std::vector<std::uint64_t> counts);
  static constexpr int kMaxMatrixRanks = 4096;  // p^2 entries, three tables: 400 MiB at the limit

  int ranks() const { return ranks_; }
  std::uint64_t count(int src, int dst) const { return counts_[at(src, dst)]; }
  std::uint64_t send_displ(int src, int dst) const { return send_displ_[at(src, dst)]; }
  std::uint64_t recv_displ(int dst, int src) const { return recv_displ_[at(dst, src)]; }
  std::uint64_t sent(int src) const { return sent_[static_cast<std::size_t>(src)]; }
  std::uint64_t received(int dst) const { return received_[static_cast<std::size_t>(dst)]; }
  std::uint64_t max_sent() const { return max_sent_; }
  std::uint64_t max_received() const { return max_received_; }
  std::uint64_t total() const { return total_; }
  // count(i, j) == count(j, i) for all pairs: then every rank's input and output blocks lie at the
  // same places (MPI_IN_PLACE's condition), so the call may run in place.
  bool symmetric() const { return symmetric_; }
  // The source rank whose block holds output element `pos` of rank `dst` (pos < received(dst)).
  int source_at(int dst, std::uint64_t pos) const;
  // "8x8, 1.2 M elements in all, rows 96..4096" (for tables and errors).
  std::string describe() const;
  bool operator==(const AllToAllVSizes& o) const { return ranks_ == o.ranks_ && counts_ == o.counts_; }

 private:
  std::size_t at(int r, int q) const {
    return static_cast<std::size_t>(r) * static_cast<std::size_t>(ranks_) + static_cast<std::size_t>(q);
  }
  int ranks_ = 0;
  std::vector<std::uint64_t> counts_, send_displ_, recv_displ_, sent_, received_;
  std::uint64_t max_sent_ = 0, max_received_ = 0, total_ = 0;
  bool symmetric_ = true;
};

// Reads a size matrix: `ranks` lines of `ranks` non-negative integers (element counts; separated by
// commas, spaces or tabs), `#` comments and blank lines ignored. InputError naming source:line.
std::shared_ptr<const AllToAllVSizes> parse_alltoallv_sizes(std::string_view text, const std::string& source);
std::shared_ptr<const AllToAllVSizes> load_alltoallv_sizes(const std::string& path);
// The matrix back in that text form (one row per line, comma separated).
std::string format_alltoallv_sizes(const AllToAllVSizes& m);

struct CollectiveArgs {
  Collective collective = Collective::AllReduce;
  std::uint64_t count = 0;
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int ranks = 1;
  int root = 0;
  std::shared_ptr<const AllToAllVSizes> sizes;  // alltoallv only (required there), else null

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
  // All-to-allv: the largest of the ranks' buffers (every rank's buffer has one size in the IR),
  // 0 without a matrix (a Schedule refuses that).
  std::uint64_t input_count() const {
    if (collective == Collective::AllToAllV) return sizes ? sizes->max_sent() : 0;
    return collective == Collective::ReduceScatter || collective == Collective::AllToAll ? count_times_ranks() : count;
  }
  std::uint64_t output_count() const {
    if (collective == Collective::AllToAllV) return sizes ? sizes->max_received() : 0;
    return collective == Collective::AllGather || collective == Collective::AllToAll ? count_times_ranks() : count;
  }
  // The elements of `rank`'s output the call defines: received(rank) for all-to-allv, else all.
  std::uint64_t defined_output_count(int rank) const {
    return collective == Collective::AllToAllV && sizes ? sizes->received(rank) : output_count();
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
// An all-to-allv call of the matrix's sizes (ranks from the matrix). nccl_tests_args refuses
// all-to-allv: its sizes are not one byte count.
CollectiveArgs alltoallv_args(std::shared_ptr<const AllToAllVSizes> sizes, DataType dtype);
// The call of one point of a run, the one place that tells the two apart: for all-to-allv the call
// of the size matrix `sizes` (`bytes` unused; InputError without a matrix or when its rank count is
// not `ranks`), for every other collective nccl-tests' call of `bytes` (nccl_tests_args; `sizes`
// must be null).
CollectiveArgs collective_call(Collective c, std::uint64_t bytes, const std::shared_ptr<const AllToAllVSizes>& sizes,
                               DataType dtype, ReduceOp op, int ranks, int root = 0);
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
