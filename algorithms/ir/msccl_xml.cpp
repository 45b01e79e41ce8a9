#include "algorithms/ir/msccl_xml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <pugixml.hpp>
#include <sstream>

#include "algorithms/ir/schedule_json.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"

namespace topocoll::algo {
namespace {

constexpr std::array kStepNames{"s", "r", "rrc", "rrs", "rcs", "rrcs", "cpy", "re", "nop"};
// Chunks per loop: a 4096-rank all-to-all of one chunk per pair.
constexpr std::uint64_t kMaxChunksPerLoop = std::uint64_t{1} << 24;

bool sends(MscclStepType t) {
  return t == MscclStepType::Send || t == MscclStepType::RecvReduceSend || t == MscclStepType::RecvCopySend ||
         t == MscclStepType::RecvReduceCopySend;
}
bool receives(MscclStepType t) {
  return t == MscclStepType::Recv || t == MscclStepType::RecvReduceCopy || t == MscclStepType::RecvReduceSend ||
         t == MscclStepType::RecvCopySend || t == MscclStepType::RecvReduceCopySend;
}
bool reads_src(MscclStepType t) {
  return t == MscclStepType::Send || t == MscclStepType::RecvReduceCopy || t == MscclStepType::RecvReduceSend ||
         t == MscclStepType::RecvReduceCopySend || t == MscclStepType::Copy || t == MscclStepType::Reduce;
}
bool writes_dst(MscclStepType t) {
  return t == MscclStepType::Recv || t == MscclStepType::RecvReduceCopy || t == MscclStepType::RecvCopySend ||
         t == MscclStepType::RecvReduceCopySend || t == MscclStepType::Copy || t == MscclStepType::Reduce;
}

// MSCCL's collective names (msccl-tools' `coll`) and ours.
Collective parse_coll(const std::string& where, const std::string& s) {
  static const std::map<std::string, Collective> names = {{"allreduce", Collective::AllReduce},
                                                          {"allgather", Collective::AllGather},
                                                          {"reduce_scatter", Collective::ReduceScatter},
                                                          {"reducescatter", Collective::ReduceScatter},
                                                          {"alltoall", Collective::AllToAll},
                                                          {"broadcast", Collective::Broadcast},
                                                          {"reduce", Collective::Reduce}};
  auto it = names.find(s);
  if (it == names.end())
    throw InputError(
        fmt::format("{}: coll=\"{}\": expected allreduce, allgather, reduce_scatter, alltoall, broadcast "
                    "or reduce",
                    where, s));
  return it->second;
}
std::string_view coll_name(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "allreduce";
    case Collective::AllGather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::AllToAll:
      return "alltoall";
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::AllToAllV:
      return "alltoallv";
  }
  return "?";
}

// Elements of the input / output buffers per element of count (1 or the rank count).
std::uint64_t input_multiple(Collective c, int p) {
  return c == Collective::ReduceScatter || c == Collective::AllToAll ? static_cast<std::uint64_t>(p) : 1;
}
std::uint64_t output_multiple(Collective c, int p) {
  return c == Collective::AllGather || c == Collective::AllToAll ? static_cast<std::uint64_t>(p) : 1;
}

std::int64_t int_attr(const pugi::xml_node& n, const char* name, const std::string& where) {
  const pugi::xml_attribute a = n.attribute(name);
  if (!a) throw InputError(fmt::format("{}: missing attribute {} (expected an integer)", where, name));
  const std::string v = a.value();
  std::int64_t x = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, x);
  if (ec != std::errc() || p != end || v.empty())
    throw InputError(fmt::format("{}: {}=\"{}\": expected an integer", where, name, v));
  return x;
}

std::int64_t ranged(std::int64_t v, std::int64_t lo, std::int64_t hi, const char* name, const std::string& where,
                    const char* what) {
  if (v < lo || v > hi)
    throw InputError(fmt::format("{}: {}=\"{}\": expected {} ({} to {})", where, name, v, what, lo, hi));
  return v;
}

char buffer_attr(const pugi::xml_node& n, const char* name, const std::string& where) {
  const pugi::xml_attribute a = n.attribute(name);
  if (!a) throw InputError(fmt::format("{}: missing attribute {} (expected i, o or s)", where, name));
  const std::string v = a.value();
  if (v != "i" && v != "o" && v != "s")
    throw InputError(
        fmt::format("{}: {}=\"{}\": expected a buffer: i (input), o (output) or s (scratch)", where, name, v));
  return v[0];
}

std::int64_t chunks_of(const MscclGpu& g, char buf, bool result_in_input) {
  if (buf == 'i') return g.i_chunks;
  if (buf == 'o') return result_in_input ? 0 : g.o_chunks;
  return g.s_chunks;
}

void check_step(const MscclProgram& p, const MscclGpu& g, const MscclThreadBlock& tb, const MscclStep& st,
                const std::string& where) {
  if (st.type == MscclStepType::Nop) return;
  if (st.cnt <= 0) throw InputError(fmt::format("{}: cnt=\"{}\": expected a positive chunk count", where, st.cnt));
  auto in_range = [&](char buf, std::int64_t off, const char* bname, const char* oname) {
    const std::int64_t n = chunks_of(g, buf, p.result_in_input);
    if (off < 0 || off > n || st.cnt > n - off)
      throw InputError(fmt::format("{}: {}=\"{}\" {}=\"{}\" cnt=\"{}\": outside the buffer ({} chunks on gpu {})",
                                   where, bname, buf, oname, off, st.cnt, n, g.id));
  };
  if (reads_src(st.type) || st.type == MscclStepType::RecvReduceSend)
    in_range(st.srcbuf, st.srcoff, "srcbuf", "srcoff");
  if (writes_dst(st.type)) {
    in_range(st.dstbuf, st.dstoff, "dstbuf", "dstoff");
    if (st.dstbuf == 'i' && !p.result_in_input)
      throw InputError(
          fmt::format("{}: type=\"{}\" writes dstbuf=\"i\": the input buffer is read-only (expected o or "
                      "s; an in-place program has o_chunks=\"0\" on every gpu)",
                      where, to_string(st.type)));
  }
  if (sends(st.type) && tb.send < 0)
    throw InputError(fmt::format("{}: type=\"{}\" sends, but the tb has send=\"-1\" (expected a send peer)", where,
                                 to_string(st.type)));
  if (receives(st.type) && tb.recv < 0)
    throw InputError(fmt::format("{}: type=\"{}\" receives, but the tb has recv=\"-1\" (expected a recv peer)", where,
                                 to_string(st.type)));
}

}  // namespace

std::string_view to_string(MscclStepType t) {
  return kStepNames[static_cast<std::size_t>(t)];
}

bool looks_like_xml(std::string_view text) {
  std::size_t i = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
  return i < text.size() && text[i] == '<';
}

MscclProgram parse_msccl_xml(std::string_view text, std::string source) {
  pugi::xml_document doc;
  const pugi::xml_parse_result r = doc.load_buffer(text.data(), text.size());
  if (!r)
    throw InputError(fmt::format("{}: not well-formed XML at byte {}: {} (expected an MSCCL <algo> program)", source,
                                 r.offset, r.description()));
  const pugi::xml_node algo = doc.child("algo");
  if (!algo) {
    const pugi::xml_node first = doc.first_child();
    throw InputError(fmt::format("{}: root element <{}>: expected <algo> (an MSCCL XML program)", source,
                                 first ? first.name() : ""));
  }
  MscclProgram p;
  p.source = source;
  const std::string at = fmt::format("{}: <algo>", source);
  p.name = algo.attribute("name").value();
  p.proto = algo.attribute("proto").value();
  if (!algo.attribute("coll"))
    throw InputError(fmt::format("{}: missing attribute coll (expected allreduce, ...)", at));
  p.collective = parse_coll(at, algo.attribute("coll").value());
  p.ngpus = static_cast<int>(ranged(int_attr(algo, "ngpus", at), 1, kMaxScheduleRanks, "ngpus", at, "a rank count"));
  p.nchunksperloop = static_cast<std::uint64_t>(ranged(int_attr(algo, "nchunksperloop", at), 1,
                                                       static_cast<std::int64_t>(kMaxChunksPerLoop), "nchunksperloop",
                                                       at, "a positive chunk count"));
  p.inplace = algo.attribute("inplace").as_int(0) != 0;
  if (algo.attribute("nchannels"))
    p.channels = static_cast<int>(
        ranged(int_attr(algo, "nchannels", at), 1, kMaxScheduleChannels, "nchannels", at, "a channel count"));
  if (algo.attribute("root"))
    p.root = static_cast<int>(ranged(int_attr(algo, "root", at), 0, p.ngpus - 1, "root", at, "a rank"));

  p.gpus.resize(static_cast<std::size_t>(p.ngpus));
  std::vector<bool> seen(static_cast<std::size_t>(p.ngpus), false);
  std::uint64_t total_steps = 0;
  for (const pugi::xml_node gn : algo.children()) {
    if (gn.type() != pugi::node_element) continue;
    if (std::string_view(gn.name()) != "gpu")
      throw InputError(fmt::format("{}: element <{}> inside <algo>: expected <gpu>", source, gn.name()));
    const int id = static_cast<int>(
        ranged(int_attr(gn, "id", at + " <gpu>"), 0, p.ngpus - 1, "id", at + " <gpu>", "a rank below ngpus"));
    const std::string gat = fmt::format("{}: <gpu id={}>", source, id);
    if (seen[static_cast<std::size_t>(id)]) throw InputError(fmt::format("{}: a second <gpu> of this id", gat));
    seen[static_cast<std::size_t>(id)] = true;
    MscclGpu& g = p.gpus[static_cast<std::size_t>(id)];
    g.id = id;
    const std::int64_t maxc = static_cast<std::int64_t>(kMaxChunksPerLoop);
    g.i_chunks = ranged(int_attr(gn, "i_chunks", gat), 0, maxc, "i_chunks", gat, "a chunk count");
    g.o_chunks = ranged(int_attr(gn, "o_chunks", gat), 0, maxc, "o_chunks", gat, "a chunk count");
    g.s_chunks = ranged(int_attr(gn, "s_chunks", gat), 0, maxc, "s_chunks", gat, "a chunk count");
    for (const pugi::xml_node tn : gn.children()) {
      if (tn.type() != pugi::node_element) continue;
      if (std::string_view(tn.name()) != "tb")
        throw InputError(fmt::format("{}: element <{}> inside <gpu>: expected <tb>", gat, tn.name()));
      MscclThreadBlock tb;
      const std::string tat0 = gat + " <tb>";
      tb.id = static_cast<int>(ranged(int_attr(tn, "id", tat0), 0, 1 << 20, "id", tat0, "a tb id"));
      const std::string tat = fmt::format("{} <tb id={}>", gat, tb.id);
      for (const MscclThreadBlock& o : g.tbs)
        if (o.id == tb.id) throw InputError(fmt::format("{}: a second <tb> of this id", tat));
      tb.send = static_cast<int>(ranged(int_attr(tn, "send", tat), -1, p.ngpus - 1, "send", tat, "-1 or a rank"));
      tb.recv = static_cast<int>(ranged(int_attr(tn, "recv", tat), -1, p.ngpus - 1, "recv", tat, "-1 or a rank"));
      if (tb.send == id || tb.recv == id)
        throw InputError(fmt::format("{}: send=\"{}\" recv=\"{}\": a gpu does not send to or receive from itself", tat,
                                     tb.send, tb.recv));
      tb.chan =
          static_cast<int>(ranged(int_attr(tn, "chan", tat), 0, kMaxScheduleChannels - 1, "chan", tat, "a channel"));
      if (tn.attribute("pattern")) {
        const std::string pat = tn.attribute("pattern").value();
        if (pat == "tree")
          tb.pattern = ChannelPattern::Tree;
        else if (pat != "pipeline")
          throw InputError(fmt::format("{}: pattern=\"{}\": expected pipeline or tree", tat, pat));
      }
      for (const pugi::xml_node sn : tn.children()) {
        if (sn.type() != pugi::node_element) continue;
        if (std::string_view(sn.name()) != "step")
          throw InputError(fmt::format("{}: element <{}> inside <tb>: expected <step>", tat, sn.name()));
        if (++total_steps > kMaxScheduleOperations)
          throw InputError(fmt::format("{}: more than {} steps in all", source, kMaxScheduleOperations));
        MscclStep st;
        st.s = static_cast<int>(int_attr(sn, "s", tat + " <step>"));
        const std::string sat = fmt::format("{} <step s={}>", tat, st.s);
        if (st.s != static_cast<int>(tb.steps.size()))
          throw InputError(
              fmt::format("{}: expected s=\"{}\" (steps are numbered in order from 0)", sat, tb.steps.size()));
        const std::string type = sn.attribute("type").value();
        auto it = std::find(kStepNames.begin(), kStepNames.end(), type);
        if (it == kStepNames.end())
          throw InputError(
              fmt::format("{}: type=\"{}\": expected an MSCCL step type (s, r, rrc, rrs, rcs, rrcs, cpy, "
                          "re, nop)",
                          sat, type));
        st.type = static_cast<MscclStepType>(it - kStepNames.begin());
        st.srcbuf = buffer_attr(sn, "srcbuf", sat);
        st.dstbuf = buffer_attr(sn, "dstbuf", sat);
        st.srcoff = int_attr(sn, "srcoff", sat);
        st.dstoff = int_attr(sn, "dstoff", sat);
        st.cnt = int_attr(sn, "cnt", sat);
        st.depid = static_cast<int>(ranged(int_attr(sn, "depid", sat), -1, 1 << 20, "depid", sat, "-1 or a tb id"));
        st.deps = static_cast<int>(ranged(int_attr(sn, "deps", sat), -1, 1 << 30, "deps", sat, "-1 or a step"));
        tb.steps.push_back(st);
      }
      g.tbs.push_back(std::move(tb));
    }
  }
  for (int r = 0; r < p.ngpus; ++r)
    if (!seen[static_cast<std::size_t>(r)])
      throw InputError(
          fmt::format("{}: no <gpu id={}> (expected one <gpu> per rank, ngpus=\"{}\")", source, r, p.ngpus));

  // Sizes: a chunk is max(input, output) / nchunksperloop elements; each gpu's buffers hold the
  // collective's sizes in those chunks (o_chunks 0 on every gpu: an allreduce whose result is left
  // in the input buffer).
  p.result_in_input = std::all_of(p.gpus.begin(), p.gpus.end(), [](const MscclGpu& g) { return g.o_chunks == 0; });
  if (p.result_in_input && p.collective != Collective::AllReduce)
    throw InputError(
        fmt::format("{}: o_chunks=\"0\" on every gpu (the result in the input buffer) is read for "
                    "allreduce only; coll=\"{}\"",
                    source, coll_name(p.collective)));
  const std::uint64_t im = input_multiple(p.collective, p.ngpus), om = output_multiple(p.collective, p.ngpus);
  const std::uint64_t mm = std::max(im, om);
  for (const MscclGpu& g : p.gpus) {
    const std::string gat = fmt::format("{}: <gpu id={}>", source, g.id);
    // i_chunks / nchunksperloop = input / max(input, output), likewise o_chunks.
    if (static_cast<std::uint64_t>(g.i_chunks) * mm != p.nchunksperloop * im)
      throw InputError(fmt::format("{}: i_chunks=\"{}\": expected {} ({} of nchunksperloop=\"{}\")", gat, g.i_chunks,
                                   p.nchunksperloop * im / mm, im == mm ? "all" : "1/ngpus", p.nchunksperloop));
    if (!p.result_in_input && static_cast<std::uint64_t>(g.o_chunks) * mm != p.nchunksperloop * om)
      throw InputError(fmt::format("{}: o_chunks=\"{}\": expected {} ({} of nchunksperloop=\"{}\")", gat, g.o_chunks,
                                   p.nchunksperloop * om / mm, om == mm ? "all" : "1/ngpus", p.nchunksperloop));
  }
  for (const MscclGpu& g : p.gpus) {
    for (const MscclThreadBlock& tb : g.tbs) {
      p.channels = std::max(p.channels, tb.chan + 1);
      for (const MscclStep& st : tb.steps) {
        const std::string sat = fmt::format("{}: <gpu id={}> <tb id={}> <step s={}>", source, g.id, tb.id, st.s);
        check_step(p, g, tb, st, sat);
        if (st.depid < 0) continue;
        auto dep =
            std::find_if(g.tbs.begin(), g.tbs.end(), [&](const MscclThreadBlock& o) { return o.id == st.depid; });
        if (dep == g.tbs.end())
          throw InputError(fmt::format("{}: depid=\"{}\": no tb of that id on gpu {}", sat, st.depid, g.id));
        if (st.deps < 0 || st.deps >= static_cast<int>(dep->steps.size()))
          throw InputError(fmt::format("{}: deps=\"{}\": tb {} has steps 0 to {}", sat, st.deps, dep->id,
                                       static_cast<int>(dep->steps.size()) - 1));
        if (dep->chan != tb.chan)
          throw InputError(
              fmt::format("{}: depends on tb {} of chan {}, this tb is on chan {}: channels do not share "
                          "data here (docs/schedule.md, MSCCL XML)",
                          sat, dep->id, dep->chan, tb.chan));
      }
    }
  }
  return p;
}

MscclProgram load_msccl_xml(const std::string& path) {
  return parse_msccl_xml(read_input_file(path, "an MSCCL XML schedule"), path);
}

std::uint64_t count_granularity(const MscclProgram& p) {
  const std::uint64_t mm = std::max(input_multiple(p.collective, p.ngpus), output_multiple(p.collective, p.ngpus));
  return p.nchunksperloop / std::gcd(p.nchunksperloop, mm);
}

namespace {

// The programs of one instantiation: the MSCCL steps replayed into our operations.
class Lowering {
 public:
  Lowering(const MscclProgram& p, const CollectiveArgs& a) : p_(p), programs_(static_cast<std::size_t>(p.ngpus)) {
    chunk_ = std::max(a.input_count(), a.output_count()) / p.nchunksperloop;
    std::int64_t max_rrs = 0;
    for (const MscclGpu& g : p.gpus)
      for (const MscclThreadBlock& tb : g.tbs)
        for (const MscclStep& st : tb.steps)
          if (st.type == MscclStepType::RecvReduceSend) max_rrs = std::max(max_rrs, st.cnt);
    temp_per_channel_ = static_cast<std::uint64_t>(max_rrs) * chunk_;
    std::int64_t s_chunks = 0;
    for (const MscclGpu& g : p.gpus) s_chunks = std::max(s_chunks, g.s_chunks);
    temp_base_ = static_cast<std::uint64_t>(s_chunks) * chunk_;
    scratch_ = temp_base_ + temp_per_channel_ * static_cast<std::uint64_t>(p.channels);
    if (p.result_in_input)
      written_.assign(static_cast<std::size_t>(p.ngpus),
                      std::vector<std::vector<bool>>(static_cast<std::size_t>(p.channels)));
  }

  std::uint64_t scratch_count() const { return scratch_; }
  std::vector<Program> take() { return std::move(programs_); }

  void lower(int rank, const MscclThreadBlock& tb, const MscclStep& st) {
    ProgramBuilder b(programs_[static_cast<std::size_t>(rank)]);
    const int ch = tb.chan;
    switch (st.type) {
      case MscclStepType::Nop:
        break;
      case MscclStepType::Send:
        b.send(tb.send, read(rank, ch, st.srcbuf, st.srcoff, st.cnt), ch);
        break;
      case MscclStepType::Recv:
        b.recv(tb.recv, write(rank, ch, st.dstbuf, st.dstoff, st.cnt), ch);
        break;
      case MscclStepType::RecvCopySend: {
        const Chunk d = write(rank, ch, st.dstbuf, st.dstoff, st.cnt);
        b.recv(tb.recv, d, ch);
        b.send(tb.send, d, ch);
        break;
      }
      case MscclStepType::RecvReduceCopy:
      case MscclStepType::RecvReduceCopySend: {
        Chunk d;
        if (st.srcbuf == st.dstbuf && st.srcoff == st.dstoff) {
          d = modify(rank, ch, st.dstbuf, st.dstoff, st.cnt);
          b.recv_reduce(tb.recv, d, ch);
        } else {  // dst = src (op) data, src unchanged
          const Chunk s = read(rank, ch, st.srcbuf, st.srcoff, st.cnt);
          d = write(rank, ch, st.dstbuf, st.dstoff, st.cnt);
          b.recv_reduce_copy(tb.recv, s, d, ch);
        }
        if (st.type == MscclStepType::RecvReduceCopySend) b.send(tb.send, d, ch);
        break;
      }
      case MscclStepType::RecvReduceSend: {
        // src (op) the data goes on without being kept: reduced in this channel's temporary.
        const Chunk s = read(rank, ch, st.srcbuf, st.srcoff, st.cnt);
        const Chunk t{BufferId::Scratch, temp_base_ + temp_per_channel_ * static_cast<std::uint64_t>(ch), s.count};
        b.copy(s, t, ch);
        b.recv_reduce(tb.recv, t, ch);
        b.send(tb.send, t, ch);
        break;
      }
      case MscclStepType::Copy: {
        const Chunk s = read(rank, ch, st.srcbuf, st.srcoff, st.cnt);
        b.copy(s, write(rank, ch, st.dstbuf, st.dstoff, st.cnt), ch);
        break;
      }
      case MscclStepType::Reduce: {
        const Chunk s = read(rank, ch, st.srcbuf, st.srcoff, st.cnt);
        b.reduce(s, modify(rank, ch, st.dstbuf, st.dstoff, st.cnt), ch);
        break;
      }
    }
  }

  // Result-in-input programs: chunks no channel of a rank wrote still hold the input.
  void finish() {
    if (!p_.result_in_input) return;
    for (int r = 0; r < p_.ngpus; ++r) {
      ProgramBuilder b(programs_[static_cast<std::size_t>(r)]);
      const std::int64_t n = p_.gpus[static_cast<std::size_t>(r)].i_chunks;
      std::vector<bool> any(static_cast<std::size_t>(n), false);
      for (const auto& w : written_[static_cast<std::size_t>(r)])
        for (std::size_t c = 0; c < w.size() && c < any.size(); ++c)
          if (w[c]) any[c] = true;
      for (std::int64_t c = 0; c < n;) {
        if (any[static_cast<std::size_t>(c)]) {
          ++c;
          continue;
        }
        std::int64_t e = c;
        while (e < n && !any[static_cast<std::size_t>(e)]) ++e;
        b.copy(at(BufferId::Input, c, e - c), at(BufferId::Output, c, e - c), 0);
        c = e;
      }
    }
  }

 private:
  Chunk at(BufferId b, std::int64_t off, std::int64_t cnt) const {
    return Chunk{b, static_cast<std::uint64_t>(off) * chunk_, static_cast<std::uint64_t>(cnt) * chunk_};
  }
  static BufferId id(char buf) {
    return buf == 'i' ? BufferId::Input : buf == 'o' ? BufferId::Output : BufferId::Scratch;
  }
  bool is_written(int r, int ch, std::int64_t c) const {
    const auto& w = written_[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)];
    return static_cast<std::size_t>(c) < w.size() && w[static_cast<std::size_t>(c)];
  }
  void mark(int r, int ch, std::int64_t off, std::int64_t cnt) {
    auto& w = written_[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)];
    if (w.size() < static_cast<std::size_t>(off + cnt)) w.resize(static_cast<std::size_t>(off + cnt), false);
    for (std::int64_t c = off; c < off + cnt; ++c) w[static_cast<std::size_t>(c)] = true;
  }
  // The input's chunks of [off, off + cnt) not yet written by this channel, copied to the output.
  void materialize(int r, int ch, std::int64_t off, std::int64_t cnt) {
    ProgramBuilder b(programs_[static_cast<std::size_t>(r)]);
    for (std::int64_t c = off; c < off + cnt;) {
      if (is_written(r, ch, c)) {
        ++c;
        continue;
      }
      std::int64_t e = c;
      while (e < off + cnt && !is_written(r, ch, e)) ++e;
      b.copy(at(BufferId::Input, c, e - c), at(BufferId::Output, c, e - c), ch);
      c = e;
    }
    mark(r, ch, off, cnt);
  }
  Chunk read(int r, int ch, char buf, std::int64_t off, std::int64_t cnt) {
    if (buf != 'i' || !p_.result_in_input) return at(id(buf), off, cnt);
    bool all = true, none = true;
    for (std::int64_t c = off; c < off + cnt; ++c) (is_written(r, ch, c) ? none : all) = false;
    if (none) return at(BufferId::Input, off, cnt);
    if (!all) materialize(r, ch, off, cnt);
    return at(BufferId::Output, off, cnt);
  }
  Chunk write(int r, int ch, char buf, std::int64_t off, std::int64_t cnt) {
    if (buf != 'i' || !p_.result_in_input) return at(id(buf), off, cnt);
    mark(r, ch, off, cnt);
    return at(BufferId::Output, off, cnt);
  }
  Chunk modify(int r, int ch, char buf, std::int64_t off, std::int64_t cnt) {
    if (buf != 'i' || !p_.result_in_input) return at(id(buf), off, cnt);
    materialize(r, ch, off, cnt);
    return at(BufferId::Output, off, cnt);
  }

  const MscclProgram& p_;
  std::vector<Program> programs_;
  std::uint64_t chunk_ = 0, temp_base_ = 0, temp_per_channel_ = 0, scratch_ = 0;
  std::vector<std::vector<std::vector<bool>>> written_;  // [rank][channel][chunk of i]
};

}  // namespace

Schedule instantiate(const MscclProgram& p, const CollectiveArgs& a) {
  if (a.collective != p.collective)
    throw InputError(fmt::format("{}: an MSCCL {} program; the call is {}", p.source, coll_name(p.collective),
                                 to_string(a.collective)));
  if (a.ranks != p.ngpus)
    throw InputError(
        fmt::format("{}: an MSCCL program of ngpus=\"{}\"; the call has {} ranks", p.source, p.ngpus, a.ranks));
  const std::uint64_t g = count_granularity(p);
  if (a.count == 0 || a.count % g != 0)
    throw InputError(fmt::format("{}: nchunksperloop=\"{}\": count {} is not a positive multiple of {}", p.source,
                                 p.nchunksperloop, a.count, g));
  Lowering low(p, a);
  // A round-robin replay: each sweep runs at most one step of every tb whose dependency is done
  // and whose receive has its data; the order steps run in is each channel's program order.
  struct Key {
    int src, dst, chan;
    bool operator<(const Key& o) const { return std::tie(src, dst, chan) < std::tie(o.src, o.dst, o.chan); }
  };
  std::map<Key, std::deque<std::pair<std::int64_t, std::string>>> in_flight;
  std::vector<std::vector<std::size_t>> next(p.gpus.size());
  std::vector<std::map<int, std::size_t>> tb_index(p.gpus.size());
  std::size_t remaining = 0;
  for (std::size_t r = 0; r < p.gpus.size(); ++r) {
    next[r].assign(p.gpus[r].tbs.size(), 0);
    for (std::size_t t = 0; t < p.gpus[r].tbs.size(); ++t) {
      tb_index[r][p.gpus[r].tbs[t].id] = t;
      remaining += p.gpus[r].tbs[t].steps.size();
    }
  }
  auto where = [&](std::size_t r, const MscclThreadBlock& tb, const MscclStep& st) {
    return fmt::format("<gpu id={}> <tb id={}> <step s={}>", r, tb.id, st.s);
  };
  while (remaining > 0) {
    bool progress = false;
    for (std::size_t r = 0; r < p.gpus.size(); ++r) {
      for (std::size_t t = 0; t < p.gpus[r].tbs.size(); ++t) {
        const MscclThreadBlock& tb = p.gpus[r].tbs[t];
        if (next[r][t] >= tb.steps.size()) continue;
        const MscclStep& st = tb.steps[next[r][t]];
        if (st.depid >= 0 && next[r][tb_index[r][st.depid]] <= static_cast<std::size_t>(st.deps)) continue;
        if (receives(st.type)) {
          auto& q = in_flight[{tb.recv, static_cast<int>(r), tb.chan}];
          if (q.empty()) continue;
          if (q.front().first != st.cnt)
            throw InputError(
                fmt::format("{}: {} receives cnt=\"{}\" from gpu {} on chan {}; the matching send ({}) "
                            "has cnt=\"{}\"",
                            p.source, where(r, tb, st), st.cnt, tb.recv, tb.chan, q.front().second, q.front().first));
          q.pop_front();
        }
        if (sends(st.type)) in_flight[{static_cast<int>(r), tb.send, tb.chan}].push_back({st.cnt, where(r, tb, st)});
        low.lower(static_cast<int>(r), tb, st);
        ++next[r][t];
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      for (std::size_t r = 0; r < p.gpus.size(); ++r)
        for (std::size_t t = 0; t < p.gpus[r].tbs.size(); ++t) {
          const MscclThreadBlock& tb = p.gpus[r].tbs[t];
          if (next[r][t] >= tb.steps.size()) continue;
          const MscclStep& st = tb.steps[next[r][t]];
          throw InputError(
              fmt::format("{}: the program deadlocks: {} waits for {} (no step can run)", p.source, where(r, tb, st),
                          st.depid >= 0 && next[r][tb_index[r][st.depid]] <= static_cast<std::size_t>(st.deps)
                              ? fmt::format("tb {} step {}", st.depid, st.deps)
                              : fmt::format("a send from gpu {} on chan {}", tb.recv, tb.chan)));
        }
    }
  }
  for (const auto& [k, q] : in_flight)
    if (!q.empty())
      throw InputError(fmt::format("{}: {} sends to gpu {} on chan {}, which never receives it", p.source,
                                   q.front().second, k.dst, k.chan));
  low.finish();
  Schedule s =
      Schedule::from_programs(p.name.empty() ? "msccl" : p.name, a, p.channels, low.scratch_count(), low.take());
  for (const MscclGpu& g : p.gpus)
    for (const MscclThreadBlock& tb : g.tbs)
      if (tb.pattern != ChannelPattern::Pipeline) s.set_pattern(tb.chan, tb.pattern);
  return s;
}

namespace {

struct ExportStep {
  MscclStepType type;
  const Op* op;
  int depid = -1, deps = -1;
  bool hasdep = false;
};
struct ExportTb {
  int send = -1, recv = -1, chan = 0;
  std::vector<ExportStep> steps;
};

char buffer_letter(BufferId b) {
  return b == BufferId::Input ? 'i' : b == BufferId::Output ? 'o' : 's';
}

}  // namespace

void write_msccl_xml(const Schedule& s, std::ostream& out) {
  const CollectiveArgs& a = s.args();
  if (s.uses_switch())
    throw InputError(
        fmt::format("schedule {}: it reduces in switches (NVLS / SHARP); MSCCL XML has no in-network "
                    "reduction",
                    s.name()));
  if (a.collective == Collective::AllToAllV)
    throw InputError(
        fmt::format("schedule {}: an all-to-allv (a size matrix); MSCCL XML programs are size-generic and "
                    "have none",
                    s.name()));
  std::vector<Program> programs;
  std::uint64_t u = 0;
  for (std::uint64_t n : {a.input_count(), a.output_count(), s.scratch_count()}) u = std::gcd(u, n);
  for (int r = 0; r < s.num_ranks(); ++r) {
    programs.push_back(s.program(r));
    for (const Op& op : programs.back()) {
      const bool has_src = op.kind == OpKind::Send || op.kind == OpKind::Copy || op.kind == OpKind::Reduce;
      const bool has_dst = op.kind != OpKind::Send;
      if (has_src) u = std::gcd(std::gcd(u, op.src.offset), op.src.count);
      if (has_dst) u = std::gcd(std::gcd(u, op.dst.offset), op.dst.count);
    }
  }
  if (u == 0) throw InputError(fmt::format("schedule {}: count 0: nothing to write as MSCCL XML", s.name()));
  const std::uint64_t in = a.input_count(), outc = a.output_count();
  pugi::xml_document doc;
  pugi::xml_node algo = doc.append_child("algo");
  algo.append_attribute("name") = s.name().c_str();
  algo.append_attribute("proto") = "Simple";
  algo.append_attribute("nchannels") = s.num_channels();
  algo.append_attribute("nchunksperloop") = static_cast<unsigned long long>(std::max(in, outc) / u);
  algo.append_attribute("ngpus") = s.num_ranks();
  algo.append_attribute("coll") = std::string(coll_name(a.collective)).c_str();
  algo.append_attribute("inplace") = 0;
  algo.append_attribute("outofplace") = 1;
  if (rooted(a.collective)) algo.append_attribute("root") = a.root;
  for (int r = 0; r < s.num_ranks(); ++r) {
    pugi::xml_node gpu = algo.append_child("gpu");
    gpu.append_attribute("id") = r;
    gpu.append_attribute("i_chunks") = static_cast<unsigned long long>(in / u);
    gpu.append_attribute("o_chunks") = static_cast<unsigned long long>(outc / u);
    gpu.append_attribute("s_chunks") = static_cast<unsigned long long>(s.scratch_count() / u);
    std::vector<ExportTb> tbs;
    std::vector<std::pair<int, int>> last(static_cast<std::size_t>(s.num_channels()), {-1, -1});  // tb, step
    for (const Op& op : programs[static_cast<std::size_t>(r)]) {
      const int ch = op.channel;
      auto find_tb = [&](bool send_side, int peer) {
        for (std::size_t t = 0; t < tbs.size(); ++t)
          if (tbs[t].chan == ch && (send_side ? tbs[t].send : tbs[t].recv) == peer) return static_cast<int>(t);
        for (std::size_t t = 0; t < tbs.size(); ++t)
          if (tbs[t].chan == ch && (send_side ? tbs[t].send : tbs[t].recv) == -1) {
            (send_side ? tbs[t].send : tbs[t].recv) = peer;
            return static_cast<int>(t);
          }
        tbs.push_back({});
        tbs.back().chan = ch;
        (send_side ? tbs.back().send : tbs.back().recv) = peer;
        return static_cast<int>(tbs.size() - 1);
      };
      int t = 0;
      MscclStepType type = MscclStepType::Nop;
      switch (op.kind) {
        case OpKind::Send:
          t = find_tb(true, op.peer), type = MscclStepType::Send;
          break;
        case OpKind::Recv:
          t = find_tb(false, op.peer), type = MscclStepType::Recv;
          break;
        case OpKind::RecvReduce:
        case OpKind::RecvReduceCopy:
          t = find_tb(false, op.peer), type = MscclStepType::RecvReduceCopy;
          break;
        case OpKind::Copy:
        case OpKind::Reduce: {
          // A local step joins the tb of the channel's previous step (or the channel's first tb).
          const int prev = last[static_cast<std::size_t>(ch)].first;
          if (prev >= 0) {
            t = prev;
          } else {
            auto it = std::find_if(tbs.begin(), tbs.end(), [&](const ExportTb& x) { return x.chan == ch; });
            if (it == tbs.end()) {
              tbs.push_back({});
              tbs.back().chan = ch;
              it = tbs.end() - 1;
            }
            t = static_cast<int>(it - tbs.begin());
          }
          type = op.kind == OpKind::Copy ? MscclStepType::Copy : MscclStepType::Reduce;
          break;
        }
        case OpKind::SwitchSend:
        case OpKind::SwitchRecv:
          break;  // refused above
      }
      ExportStep st{type, &op};
      auto& [pt, ps] = last[static_cast<std::size_t>(ch)];
      if (pt >= 0 && pt != t) {
        st.depid = pt;
        st.deps = ps;
        tbs[static_cast<std::size_t>(pt)].steps[static_cast<std::size_t>(ps)].hasdep = true;
      }
      tbs[static_cast<std::size_t>(t)].steps.push_back(st);
      pt = t;
      ps = static_cast<int>(tbs[static_cast<std::size_t>(t)].steps.size()) - 1;
    }
    // A tree channel without operations keeps its pattern in an empty tb.
    for (int ch = 0; ch < s.num_channels(); ++ch)
      if (s.pattern(ch) == ChannelPattern::Tree &&
          std::none_of(tbs.begin(), tbs.end(), [&](const ExportTb& x) { return x.chan == ch; })) {
        tbs.push_back({});
        tbs.back().chan = ch;
      }
    for (std::size_t t = 0; t < tbs.size(); ++t) {
      pugi::xml_node tb = gpu.append_child("tb");
      tb.append_attribute("id") = static_cast<int>(t);
      tb.append_attribute("send") = tbs[t].send;
      tb.append_attribute("recv") = tbs[t].recv;
      tb.append_attribute("chan") = tbs[t].chan;
      if (s.pattern(tbs[t].chan) == ChannelPattern::Tree) tb.append_attribute("pattern") = "tree";
      for (std::size_t i = 0; i < tbs[t].steps.size(); ++i) {
        const ExportStep& st = tbs[t].steps[i];
        const Op& op = *st.op;
        const Chunk src = op.kind == OpKind::Send || op.kind == OpKind::Copy || op.kind == OpKind::Reduce ||
                                  op.kind == OpKind::RecvReduceCopy
                              ? op.src
                              : op.dst;
        const Chunk dst = op.kind == OpKind::Send ? op.src : op.dst;
        pugi::xml_node step = tb.append_child("step");
        step.append_attribute("s") = static_cast<int>(i);
        step.append_attribute("type") = std::string(to_string(st.type)).c_str();
        step.append_attribute("srcbuf") = std::string(1, buffer_letter(src.buffer)).c_str();
        step.append_attribute("srcoff") = static_cast<unsigned long long>(src.offset / u);
        step.append_attribute("dstbuf") = std::string(1, buffer_letter(dst.buffer)).c_str();
        step.append_attribute("dstoff") = static_cast<unsigned long long>(dst.offset / u);
        step.append_attribute("cnt") = static_cast<unsigned long long>(op.count() / u);
        step.append_attribute("depid") = st.depid;
        step.append_attribute("deps") = st.deps;
        step.append_attribute("hasdep") = st.hasdep ? 1 : 0;
      }
    }
  }
  doc.save(out, "  ", pugi::format_indent | pugi::format_no_declaration);
}

}  // namespace topocoll::algo
