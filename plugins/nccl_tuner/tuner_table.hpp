// The tuner table: per collective and size range, the NCCL algorithm, protocol and channel count
// to run, for a job of so many nodes and ranks. `topocoll tune` writes it, the NCCL tuner plugin
// (libnccl-tuner-topocoll.so) reads it; the format is in docs/tuner.md.
//
//   # comments and empty lines are ignored
//   collective,min_bytes,max_bytes,algorithm,protocol,channels,nodes,ranks
//   allreduce,0,65535,NVLS,SIMPLE,16,2,16
//
// No exceptions escape the parser (it runs inside NCCL's process): errors are values naming the
// line. Only the standard library is used, so that the plugin links nothing else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topocoll::tuner {

// NCCL's numbering (nccl_tuner_abi.h): the values index NCCL's cost table.
enum class Collective { Broadcast = 0, Reduce = 1, AllGather = 2, ReduceScatter = 3, AllReduce = 4 };
enum class Algorithm { Tree = 0, Ring = 1, CollNetDirect = 2, CollNetChain = 3, Nvls = 4, NvlsTree = 5, Pat = 6 };
enum class Protocol { LL = 0, LL128 = 1, Simple = 2 };

inline constexpr int kAny = -1;  // nodes / ranks: any job; channels: NCCL's own count
inline constexpr int kMaxChannels = 64;
inline constexpr std::string_view kHeader = "collective,min_bytes,max_bytes,algorithm,protocol,channels,nodes,ranks";

struct Row {
  Collective collective = Collective::AllReduce;
  std::uint64_t min_bytes = 0, max_bytes = 0;  // inclusive range of NCCL's nBytes
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = kAny;  // 1..kMaxChannels, or kAny
  int nodes = kAny;     // the job's node count, or kAny
  int ranks = kAny;     // the job's rank count, or kAny
  bool operator==(const Row&) const = default;
};

// A parsed table, or the first error: `line` (1-based) and what was wrong.
struct ParseResult {
  std::vector<Row> rows;
  int error_line = 0;  // 0: no error
  std::string error;
  bool ok() const { return error.empty(); }
};

// Names as the table writes them: NCCL's algorithm and protocol macro suffixes (RING, NVLS_TREE,
// SIMPLE) and the collectives in lower case (allreduce), views of string literals (so .data() is
// a C string). Parsing ignores case.
std::string_view to_string(Collective c);
std::string_view to_string(Algorithm a);
// ASCII lower case (NCCL's example tuner spells algorithms and protocols so: "ring", "ll128").
std::string lower_case(std::string_view s);
std::string_view to_string(Protocol p);
std::optional<Collective> parse_collective(std::string_view s);
std::optional<Algorithm> parse_algorithm(std::string_view s);
std::optional<Protocol> parse_protocol(std::string_view s);

ParseResult parse_table(std::string_view text);
// Reads and parses the file; a file that cannot be read is an error on line 0.
ParseResult read_table(const std::string& path);

// The first row for this collective, size and job (rows with kAny match every job), or none.
const Row* find_row(const std::vector<Row>& rows, Collective c, std::uint64_t bytes, int nodes, int ranks);

// The table as parse_table reads it: `comments` (each written after "# "), the header, the rows.
std::string format_table(const std::vector<Row>& rows, const std::vector<std::string>& comments);

// The same choices in the configuration format of NCCL's example tuner (ext-tuner/example,
// NCCL_TUNER_CONFIG_FILE): collective_type,min_bytes,max_bytes,algorithm,protocol,channels,
// nNodes,nRanks, names in lower case; numPipeOps and regBuff left out (any).
std::string format_nccl_example(const std::vector<Row>& rows, const std::vector<std::string>& comments);

}  // namespace topocoll::tuner
