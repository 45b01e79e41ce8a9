// MSCCL XML interchange (docs/schedule.md "MSCCL XML"): the <algo><gpu><tb><step> programs that
// msccl-tools / MSCCLang write and the MSCCL runtime (NCCL / RCCL with MSCCL) executes.
//
//   <algo name nchunksperloop nchannels proto ngpus coll inplace [outofplace]>
//     <gpu id i_chunks o_chunks s_chunks>
//       <tb id send recv chan [pattern]>
//         <step s type srcbuf srcoff dstbuf dstoff cnt depid deps hasdep/>
//
// Chunks are fractions of the buffers: one chunk is max(input, output elements) / nchunksperloop
// elements, so a program is size-generic and runs at every count that makes that a whole number
// (count_granularity). Import: each MSCCL channel (a tb's `chan`) is one channel of ours; the tbs
// of one (gpu, chan) are merged into that channel's in-order program in an order that respects
// every tb's order, the dependencies and the FIFO order of each connection (a round-robin replay
// of the program). A dependency on a tb of another channel is refused: our channels do not share
// data (schedule.hpp rule 6). Export: one tb per (rank, channel, send peer / recv peer) pair, the
// channel's order expressed with a dependency on the previous operation.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo {

enum class MscclStepType : std::uint8_t {
  Send,
  Recv,
  RecvReduceCopy,
  RecvReduceSend,
  RecvCopySend,
  RecvReduceCopySend,
  Copy,
  Reduce,
  Nop
};
std::string_view to_string(MscclStepType t);  // "s", "r", "rrc", ...

struct MscclStep {
  int s = 0;
  MscclStepType type = MscclStepType::Nop;
  char srcbuf = 'i', dstbuf = 'o';                 // 'i' input, 'o' output, 's' scratch
  std::int64_t srcoff = -1, dstoff = -1, cnt = 0;  // chunks
  int depid = -1, deps = -1;                       // the tb (id) and step this step waits for; -1: none
};

struct MscclThreadBlock {
  int id = 0;
  int send = -1, recv = -1;  // peers, -1: none
  int chan = 0;
  ChannelPattern pattern = ChannelPattern::Pipeline;  // topocoll's `pattern` attribute ("tree"), optional
  std::vector<MscclStep> steps;
};

struct MscclGpu {
  int id = 0;
  std::int64_t i_chunks = 0, o_chunks = 0, s_chunks = 0;
  std::vector<MscclThreadBlock> tbs;
};

struct MscclProgram {
  std::string source;  // the file, for messages
  std::string name, proto;
  Collective collective = Collective::AllReduce;
  int ngpus = 0;
  int root = 0;  // topocoll's `root` attribute for broadcast / reduce, optional (0)
  std::uint64_t nchunksperloop = 1;
  int channels = 1;  // the largest tb chan + 1
  bool inplace = false;
  // o_chunks = 0 on every gpu (an allreduce that leaves its result in the input buffer, as
  // msccl-tools writes in-place programs): buffer i is read from our input until this channel
  // wrote it, and written to our output.
  bool result_in_input = false;
  std::vector<MscclGpu> gpus;  // by id
};

// Throws InputError naming `source`, the element (gpu / tb / step ids) and what was expected:
// malformed XML, a missing or non-integer attribute, an unknown step type or buffer, an offset out
// of its buffer, a peer that is not a rank, a dependency on a missing step or on another channel.
MscclProgram parse_msccl_xml(std::string_view text, std::string source);
MscclProgram load_msccl_xml(const std::string& path);
// Counts must be positive multiples of it (a chunk is a whole number of elements).
std::uint64_t count_granularity(const MscclProgram& p);
// The schedule of one call; InputError when the collective or rank count is not the program's, the
// count is not a multiple of count_granularity, or the program deadlocks or mismatches a transfer.
Schedule instantiate(const MscclProgram& p, const CollectiveArgs& args);
// The schedule as MSCCL XML (chunks of gcd(every offset, count and buffer size) elements). InputError
// for what MSCCL XML cannot say: switch groups (in-network reduction) and all-to-allv size matrices.
void write_msccl_xml(const Schedule& s, std::ostream& out);
// The first significant character is '<' (after blanks and a UTF-8 byte-order mark).
bool looks_like_xml(std::string_view text);

}  // namespace topocoll::algo
