// topocoll._topocoll: the C++ library as a Python module (nanobind). Thin by design: every
// function here is one call into the library (topologies, the registry, the schedule IR, the
// verifier, the simulator's simulate_point, schedule JSON); python/topocoll/ adds the Python
// layer (reprs, dicts and DataFrames, generators written in Python). docs/python.md.
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/operators.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>
#include <string>
#include <vector>

#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/schedule_file.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"
#include "common/records.hpp"
#include "python/src/bindings.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/simgrid/simgrid_engine.hpp"
#include "simulator/sweep.hpp"
#include "topologies/load.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace topocoll::python {

using algo::BufferId;
using algo::Chunk;
using algo::CollectiveArgs;
using algo::Op;
using algo::OpKind;
using algo::Schedule;

// A loaded topology with the name it was asked for (records carry it) and its algorithm view.
struct LoadedTopology {
  topo::Topology topology;
  std::string name;
  algo::Layout layout;
};

LoadedTopology load(const std::string& name, std::optional<int> nodes, std::optional<std::string> fabric,
                    std::optional<double> oversubscription) {
  topo::TopologyOptions o;
  o.topology = name;
  o.nodes = nodes;
  if (fabric) o.fabric = topo::parse_fabric(*fabric);
  o.oversubscription = oversubscription;
  o.merge_nvswitch_planes = true;  // the simulator's view, as `topocoll sim` loads it
  topo::Topology t = topo::load_topology(o);
  algo::Layout l = algo::layout_of(t);
  return {std::move(t), name, std::move(l)};
}

BufferId parse_buffer(const std::string& s) {
  if (s == "input") return BufferId::Input;
  if (s == "output") return BufferId::Output;
  if (s == "scratch") return BufferId::Scratch;
  throw InputError(fmt::format("buffer '{}': expected input, output or scratch", s));
}

algo::ChannelPattern parse_pattern(const std::string& s) {
  if (s == "pipeline") return algo::ChannelPattern::Pipeline;
  if (s == "tree") return algo::ChannelPattern::Tree;
  throw InputError(fmt::format("channel pattern '{}': expected pipeline or tree", s));
}

// `sizes`: an all-to-allv's size matrix, row i the element counts rank i sends each rank (its
// rank count is the call's; `count` is then unused). Only for alltoallv, and required there.
CollectiveArgs make_args(const std::string& collective, std::uint64_t count, const std::string& dtype,
                         const std::string& op, int ranks, int root,
                         const std::optional<std::vector<std::vector<std::uint64_t>>>& sizes) {
  CollectiveArgs a;
  a.collective = algo::parse_collective(collective);
  a.count = count;
  a.dtype = algo::parse_dtype(dtype);
  a.op = algo::parse_op(op);
  if (sizes) {
    if (a.collective != algo::Collective::AllToAllV)
      throw InputError(fmt::format("sizes: a size matrix is for alltoallv, not {}", algo::to_string(a.collective)));
    const std::size_t p = sizes->size();
    std::vector<std::uint64_t> flat;
    for (std::size_t i = 0; i < p; ++i) {
      if ((*sizes)[i].size() != p)
        throw InputError(fmt::format("sizes[{}]: {} counts in the row, expected {} (a square matrix, one row per rank)",
                                     i, (*sizes)[i].size(), p));
      flat.insert(flat.end(), (*sizes)[i].begin(), (*sizes)[i].end());
    }
    a.sizes = algo::AllToAllVSizes::make(static_cast<int>(std::min<std::size_t>(p, 1u << 30)), std::move(flat));
    if (ranks == 1) ranks = a.sizes->ranks();  // the default: the matrix's
    if (ranks != a.sizes->ranks())
      throw InputError(fmt::format("ranks {}: the size matrix is for {} ranks", ranks, a.sizes->ranks()));
    a.count = 0;
  } else if (a.collective == algo::Collective::AllToAllV) {
    throw InputError(
        "alltoallv: expected sizes=[[...], ...], one row per rank of the element counts it sends each rank");
  }
  if (ranks < 1) throw InputError(fmt::format("ranks {}: expected at least 1", ranks));
  if (root < 0 || root >= ranks) throw InputError(fmt::format("root {}: expected a rank of 0..{}", root, ranks - 1));
  a.ranks = ranks;
  a.root = root;
  return a;
}

// A schedule written op by op: one program per rank, appended to in program order.
class ScheduleBuilder {
 public:
  ScheduleBuilder(std::string name, CollectiveArgs args, int channels, std::uint64_t scratch_count)
      : name_(std::move(name)),
        args_(args),
        channels_(channels),
        scratch_count_(scratch_count),
        programs_(static_cast<std::size_t>(args.ranks)) {
    algo::validate_header(name_, args_, channels_, scratch_count_);
  }
  void add(int rank, Op op) { program_of(rank).push_back(op); }
  void set_pattern(int channel, const std::string& p) {
    if (channel < 0 || channel >= channels_)
      throw InputError(
          fmt::format("channel {}: expected 0..{} (the schedule has {} channels)", channel, channels_ - 1, channels_));
    if (patterns_.empty()) patterns_.assign(static_cast<std::size_t>(channels_), algo::ChannelPattern::Pipeline);
    patterns_[static_cast<std::size_t>(channel)] = parse_pattern(p);
  }
  const algo::Program& program(int rank) { return program_of(rank); }
  Schedule build() const {
    Schedule s = Schedule::from_programs(name_, args_, channels_, scratch_count_, programs_);
    for (std::size_t c = 0; c < patterns_.size(); ++c) s.set_pattern(static_cast<int>(c), patterns_[c]);
    return s;
  }
  const CollectiveArgs& args() const { return args_; }
  int channels() const { return channels_; }

 private:
  algo::Program& program_of(int rank) {
    if (rank < 0 || rank >= args_.ranks)
      throw InputError(
          fmt::format("rank {}: expected 0..{} (the schedule has {} ranks)", rank, args_.ranks - 1, args_.ranks));
    return programs_[static_cast<std::size_t>(rank)];
  }
  std::string name_;
  CollectiveArgs args_;
  int channels_;
  std::uint64_t scratch_count_;
  std::vector<algo::Program> programs_;
  std::vector<algo::ChannelPattern> patterns_;
};

Op transfer(OpKind kind, int peer, Chunk c, int channel) {
  Op op;
  op.kind = kind;
  op.peer = peer;
  op.channel = static_cast<std::uint16_t>(channel);
  (kind == OpKind::Send ? op.src : op.dst) = c;
  return op;
}

Op local(OpKind kind, Chunk src, Chunk dst, int channel) {
  Op op;
  op.kind = kind;
  op.channel = static_cast<std::uint16_t>(channel);
  op.src = src;
  op.dst = dst;
  return op;
}

void check_channel(int channel) {
  if (channel < 0 || channel >= algo::kMaxChannels)
    throw InputError(fmt::format("channel {}: expected 0..{}", channel, algo::kMaxChannels - 1));
}

// ScheduleBuilder's op methods: b.send(rank, peer, chunk, channel) and the like.
template <OpKind Kind>
auto transfer_adder() {
  return [](ScheduleBuilder& b, int rank, int peer, Chunk c, int channel) {
    check_channel(channel);
    b.add(rank, transfer(Kind, peer, c, channel));
  };
}
template <OpKind Kind>
auto local_adder() {
  return [](ScheduleBuilder& b, int rank, Chunk src, Chunk dst, int channel) {
    check_channel(channel);
    b.add(rank, local(Kind, src, dst, channel));
  };
}

nb::dict verify_dict(const algo::VerifyResult& r) {
  nb::dict d;
  d["ok"] = r.ok();
  d["failure"] = std::string(algo::to_string(r.failure));
  d["message"] = r.message;
  d["operations"] = r.operations;
  d["steps"] = r.steps;
  d["max_bytes_sent"] = r.max_bytes_sent;
  d["max_intra_bytes_sent"] = r.max_intra_bytes_sent;
  d["max_inter_bytes_sent"] = r.max_inter_bytes_sent;
  d["total_bytes_sent"] = r.total_bytes_sent;
  return d;
}

algo::VerifyResult verify_schedule(const Schedule& s, const std::optional<algo::Layout>& layout, bool in_place) {
  algo::VerifyOptions o;
  o.in_place = in_place;
  if (layout) {
    if (layout->ranks != s.num_ranks())
      throw InputError(fmt::format("layout of {} ranks for a schedule of {} ranks", layout->ranks, s.num_ranks()));
    o.node_of = layout->node_of;
    o.domain_of = layout->domain_of_ranks();
  }
  return algo::verify(s, o);
}

// One simulated point as `topocoll sim` runs it (tools/sim_command.cpp): the base calibration
// (or a file), every protocol `protocol` asks for, the fastest kept; the record as JSON text.
std::string simulate(const LoadedTopology& lt, const Schedule& s, const std::string& engine_name,
                     const std::string& protocol, const std::string& calibration, std::uint64_t slice_bytes,
                     const std::string& algorithm) {
  const topo::Topology& t = lt.topology;
  if (s.num_ranks() != t.num_ranks())
    throw InputError(fmt::format("schedule '{}' has {} ranks; {} x {} has {} GPUs", s.name(), s.num_ranks(), lt.name,
                                 t.nodes(), t.num_ranks()));
  std::unique_ptr<sim::Engine> engine = sim::make_engine(engine_name);
  const sim::Calibration calib = calibration.empty() ? sim::base_calibration() : sim::load_calibration(calibration);
  const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t);
  const sim::ProtocolSet protocols = sim::protocol_set(nccl, calib, protocol, "protocol");
  const CollectiveArgs& a = s.args();
  records::Record base = sim::simulated_base(t, engine->name(), lt.name, a.op, slice_bytes, calib.source);
  base.dtype = std::string(algo::to_string(a.dtype));
  base.date = records::now_iso8601();
  base.collective = std::string(algo::to_string(a.collective));
  const sim::SimulatedPoint p =
      sim::simulate_point(*engine, t, s, protocols, base, algorithm.empty() ? s.name() : algorithm,
                          algo::nccl_tests_bytes(a), a.count, a.dtype);
  return to_json(p.record).dump();
}

// The schedule of a schedule file (algorithms/schedule_file.hpp) at `count` elements: a JSON
// file's own count when none is given; a size-generic file (MSCCL XML) needs one, a multiple of
// its granularity.
Schedule file_schedule(const algo::ScheduleFile& f, std::optional<std::uint64_t> count) {
  if (!count && !f.count)
    throw InputError(
        fmt::format("{}: size-generic (counts that are multiples of {}): give a count", f.path, f.granularity));
  const std::uint64_t n = count ? *count : *f.count;
  if (f.count && n != *f.count)
    throw InputError(fmt::format("count {}: {} is written for count {} only", n, f.path, *f.count));
  if (!f.count && (n == 0 || n % f.granularity != 0))
    throw InputError(fmt::format("count {}: {} needs a positive multiple of {}", n, f.path, f.granularity));
  return f.instantiate(f.args_at(n));
}

std::string chunk_repr(const Chunk& c) {
  return fmt::format("{}[{}:{}]", algo::to_string(c.buffer), c.offset, c.end());
}

}  // namespace topocoll::python

NB_MODULE(_topocoll, m) {
  using namespace topocoll;
  using namespace topocoll::python;
  m.doc() = "topocoll's C++ library: topologies, algorithms, schedules, verifier, simulator";
  sim::register_simgrid_engine();

  // Error tiers (common/errors.hpp): the most derived class registered last is matched first.
  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  nb::exception<ScheduleError>(m, "ScheduleError", m.attr("Error").ptr());
  nb::exception<InternalError>(m, "InternalError", m.attr("Error").ptr());
  nb::exception<InputError>(m, "InputError", PyExc_ValueError);

  nb::class_<algo::Layout>(m, "Layout")
      .def_ro("ranks", &algo::Layout::ranks)
      .def_ro("nodes", &algo::Layout::nodes)
      .def_ro("node_of", &algo::Layout::node_of)
      .def_ro("node_ranks", &algo::Layout::node_ranks)
      .def_ro("rail_of", &algo::Layout::rail_of)
      .def_ro("rails", &algo::Layout::rails)
      .def_prop_ro("ranks_per_node", &algo::Layout::ranks_per_node)
      .def("__repr__",
           [](const algo::Layout& l) { return fmt::format("Layout({} ranks, {} nodes)", l.ranks, l.nodes); });
  m.def(
      "uniform_layout", [](int nodes, int per_node) { return algo::uniform_layout(nodes, per_node); }, "nodes"_a,
      "per_node"_a, "nodes x per_node ranks, rank = node * per_node + local (a test layout, no topology)");

  nb::class_<LoadedTopology>(m, "Topology")
      .def_ro("name", &LoadedTopology::name)
      .def_ro("layout", &LoadedTopology::layout)
      .def_prop_ro("nodes", [](const LoadedTopology& t) { return t.topology.nodes(); })
      .def_prop_ro("num_ranks", [](const LoadedTopology& t) { return t.topology.num_ranks(); })
      .def_prop_ro("notes", [](const LoadedTopology& t) { return t.topology.notes(); })
      .def_prop_ro("fabric",
                   [](const LoadedTopology& t) -> std::optional<std::string> {
                     if (!t.topology.fabric()) return std::nullopt;
                     return std::string(topo::to_string(t.topology.fabric()->kind));
                   })
      .def("nccl_channels",
           [](const LoadedTopology& t) { return sim::nccl_channels(sim::estimate_nccl_graph(t.topology)); });
  m.def(
      "collective_name", [](const std::string& c) { return std::string(algo::to_string(algo::parse_collective(c))); },
      "collective"_a,
      "The canonical name of a collective (nccl-tests' spellings accepted); InputError for an unknown one");
  m.def("load_topology", &load, "topology"_a, "nodes"_a = nb::none(), "fabric"_a = nb::none(),
        "oversubscription"_a = nb::none(),
        "A preset name, an NCCL / hwloc XML, nvidia-smi topo -m text or a YAML spec, copied `nodes` times");

  nb::class_<CollectiveArgs>(m, "CollectiveArgs")
      .def(nb::new_(&make_args), "collective"_a = "allreduce", "count"_a = 0, "dtype"_a = "float32", "op"_a = "sum",
           "ranks"_a = 1, "root"_a = 0, "sizes"_a = nb::none())
      .def_prop_ro("sizes",
                   [](const CollectiveArgs& a) -> std::optional<std::vector<std::vector<std::uint64_t>>> {
                     if (!a.sizes) return std::nullopt;
                     std::vector<std::vector<std::uint64_t>> rows(static_cast<std::size_t>(a.sizes->ranks()));
                     for (int i = 0; i < a.sizes->ranks(); ++i)
                       for (int j = 0; j < a.sizes->ranks(); ++j)
                         rows[static_cast<std::size_t>(i)].push_back(a.sizes->count(i, j));
                     return rows;
                   })
      .def("defined_output_count", &CollectiveArgs::defined_output_count, "rank"_a)
      .def_prop_ro("collective", [](const CollectiveArgs& a) { return std::string(algo::to_string(a.collective)); })
      .def_prop_ro("dtype", [](const CollectiveArgs& a) { return std::string(algo::to_string(a.dtype)); })
      .def_prop_ro("op", [](const CollectiveArgs& a) { return std::string(algo::to_string(a.op)); })
      .def_ro("count", &CollectiveArgs::count)
      .def_ro("ranks", &CollectiveArgs::ranks)
      .def_ro("root", &CollectiveArgs::root)
      .def_prop_ro("input_count", &CollectiveArgs::input_count)
      .def_prop_ro("output_count", &CollectiveArgs::output_count)
      .def_prop_ro("element_size", [](const CollectiveArgs& a) { return algo::size_of(a.dtype); })
      .def_prop_ro("nccl_tests_bytes", [](const CollectiveArgs& a) { return algo::nccl_tests_bytes(a); });
  m.def(
      "nccl_tests_args",
      [](const std::string& collective, std::uint64_t bytes, const std::string& dtype, const std::string& op, int ranks,
         int root) {
        return algo::nccl_tests_args(algo::parse_collective(collective), bytes, algo::parse_dtype(dtype),
                                     algo::parse_op(op), ranks, root);
      },
      "collective"_a, "bytes"_a, "dtype"_a = "float32", "op"_a = "sum", "ranks"_a, "root"_a = 0,
      "The call nccl-tests runs at -b BYTES");

  nb::class_<algo::Tuning>(m, "Tuning")
      .def(
          "__init__",
          [](algo::Tuning* t, int channels, std::uint64_t slice_bytes, int pipeline_depth) {
            if (channels < 1 || channels > algo::kMaxChannels)
              throw InputError(fmt::format("channels {}: expected 1..{}", channels, algo::kMaxChannels));
            if (slice_bytes == 0) throw InputError("slice_bytes 0: expected at least 1 byte");
            new (t) algo::Tuning{channels, slice_bytes, pipeline_depth};
          },
          "channels"_a = algo::Tuning{}.channels, "slice_bytes"_a = algo::Tuning{}.slice_bytes,
          "pipeline_depth"_a = algo::Tuning{}.pipeline_depth)
      .def_ro("channels", &algo::Tuning::channels)
      .def_ro("slice_bytes", &algo::Tuning::slice_bytes)
      .def_ro("pipeline_depth", &algo::Tuning::pipeline_depth);

  nb::class_<Chunk>(m, "Chunk")
      .def(
          "__init__",
          [](Chunk* c, const std::string& buffer, std::uint64_t offset, std::uint64_t count) {
            new (c) Chunk{parse_buffer(buffer), offset, count};
          },
          "buffer"_a, "offset"_a, "count"_a)
      .def_prop_ro("buffer", [](const Chunk& c) { return std::string(algo::to_string(c.buffer)); })
      .def_ro("offset", &Chunk::offset)
      .def_ro("count", &Chunk::count)
      .def_prop_ro("end", &Chunk::end)
      .def(nb::self == nb::self)
      .def("__repr__", &chunk_repr);

  nb::class_<Op>(m, "Op")
      .def_prop_ro("kind", [](const Op& o) { return std::string(algo::to_string(o.kind)); })
      .def_prop_ro("channel", [](const Op& o) { return int{o.channel}; })
      .def_ro("peer", &Op::peer)
      .def_ro("src", &Op::src)
      .def_ro("dst", &Op::dst)
      .def_prop_ro("count", &Op::count)
      .def(nb::self == nb::self)
      .def("__repr__", [](const Op& o) { return algo::describe(o); });

  nb::class_<Schedule>(m, "Schedule")
      .def_prop_ro("name", &Schedule::name)
      .def_prop_ro("args", &Schedule::args)
      .def_prop_ro("num_ranks", &Schedule::num_ranks)
      .def_prop_ro("num_channels", &Schedule::num_channels)
      .def_prop_ro("scratch_count", &Schedule::scratch_count)
      .def(
          "program",
          [](const Schedule& s, int rank) {
            if (rank < 0 || rank >= s.num_ranks())
              throw InputError(fmt::format("rank {}: expected 0..{} (the schedule has {} ranks)", rank,
                                           s.num_ranks() - 1, s.num_ranks()));
            return s.program(rank);
          },
          "rank"_a)
      .def(
          "pattern", [](const Schedule& s, int ch) { return std::string(algo::to_string(s.pattern(ch))); },
          "channel"_a);

  nb::class_<ScheduleBuilder>(m, "ScheduleBuilder")
      .def(nb::init<std::string, CollectiveArgs, int, std::uint64_t>(), "name"_a, "args"_a, "channels"_a = 1,
           "scratch_count"_a = 0)
      .def_prop_ro("args", &ScheduleBuilder::args)
      .def_prop_ro("channels", &ScheduleBuilder::channels)
      .def("send", transfer_adder<OpKind::Send>(), "rank"_a, "peer"_a, "src"_a, "channel"_a = 0)
      .def("recv", transfer_adder<OpKind::Recv>(), "rank"_a, "peer"_a, "dst"_a, "channel"_a = 0)
      .def("recv_reduce", transfer_adder<OpKind::RecvReduce>(), "rank"_a, "peer"_a, "dst"_a, "channel"_a = 0)
      .def(
          "recv_reduce_copy",
          [](ScheduleBuilder& b, int rank, int peer, Chunk src, Chunk dst, int channel) {
            check_channel(channel);
            Op op = local(OpKind::RecvReduceCopy, src, dst, channel);
            op.peer = peer;
            b.add(rank, op);
          },
          "rank"_a, "peer"_a, "src"_a, "dst"_a, "channel"_a = 0)
      .def("copy", local_adder<OpKind::Copy>(), "rank"_a, "src"_a, "dst"_a, "channel"_a = 0)
      .def("reduce", local_adder<OpKind::Reduce>(), "rank"_a, "src"_a, "dst"_a, "channel"_a = 0)
      .def(
          "add",
          [](ScheduleBuilder& b, int rank, const Op& op) {
            check_channel(op.channel);
            b.add(rank, op);
          },
          "rank"_a, "op"_a, "Appends an existing operation (one of another schedule's programs)")
      .def("set_pattern", &ScheduleBuilder::set_pattern, "channel"_a, "pattern"_a)
      .def("program", &ScheduleBuilder::program, "rank"_a)
      .def("build", &ScheduleBuilder::build);

  // The registry (algorithms/registry.hpp).
  m.def("registry", [] {
    nb::list out;
    for (const algo::Algorithm& a : algo::registry()) {
      nb::dict d;
      d["name"] = a.name;
      d["description"] = a.description;
      d["collective"] = std::string(algo::to_string(a.collective));
      out.append(d);
    }
    return out;
  });
  m.def(
      "supports",
      [](const std::string& name, const algo::Layout& l, const CollectiveArgs& a, const algo::Tuning& t) {
        const algo::Support s = algo::find_algorithm(name).supports(l, a, t);
        return std::make_pair(s.ok, s.reason);
      },
      "name"_a, "layout"_a, "args"_a, "tuning"_a);
  m.def(
      "generate",
      [](const std::string& name, const algo::Layout& l, const CollectiveArgs& a, const algo::Tuning& t) {
        const algo::Algorithm& alg = algo::find_algorithm(name);
        if (l.ranks != a.ranks)
          throw InputError(fmt::format("args.ranks {}: the layout has {} ranks", a.ranks, l.ranks));
        if (alg.collective != a.collective)
          throw InputError(fmt::format("{} is a {} algorithm; args.collective is {}", name,
                                       algo::to_string(alg.collective), algo::to_string(a.collective)));
        const algo::Support s = alg.supports(l, a, t);
        if (!s.ok) throw InputError(fmt::format("{} is not supported here: {}", name, s.reason));
        return alg.generate(l, a, t);
      },
      "name"_a, "layout"_a, "args"_a, "tuning"_a);
  m.def(
      "cost",
      [](const std::string& name, const algo::Layout& l, const CollectiveArgs& a, const algo::Tuning& t) {
        const algo::CostSheet c = algo::find_algorithm(name).cost(l, a, t);
        nb::dict d;
        d["steps"] = c.steps;
        d["bytes_sent"] = c.bytes_sent;
        d["inter_bytes_sent"] = c.inter_bytes_sent;
        d["busbw_factor"] = c.busbw_factor;
        return d;
      },
      "name"_a, "layout"_a, "args"_a, "tuning"_a);

  m.def(
      "verify",
      [](const Schedule& s, std::optional<algo::Layout> layout, bool in_place) {
        algo::VerifyResult r;
        {
          nb::gil_scoped_release unlocked;  // other Python threads run while the verifier does
          r = verify_schedule(s, layout, in_place);
        }
        return verify_dict(r);
      },
      "schedule"_a, "layout"_a = nb::none(), "in_place"_a = false);

  m.def("simulate_json", &simulate, "topology"_a, "schedule"_a, "engine"_a = "analytic", "protocol"_a = "",
        "calibration"_a = "", "slice_bytes"_a = algo::Tuning{}.slice_bytes, "algorithm"_a = "",
        nb::call_guard<nb::gil_scoped_release>());

  // Schedule interchange (algorithms/ir/schedule_json.hpp).
  m.def("schedule_to_json", [](const Schedule& s) {
    std::ostringstream os;
    algo::write_schedule_json(s, os);
    return os.str();
  });
  m.def("schedule_from_json", &algo::read_schedule_json, "text"_a, "source_name"_a = "<string>");
  m.def("load_schedule_json", &algo::load_schedule_json, "path"_a);
  // Any schedule file the commands take (`--schedule FILE`): told apart by its content.
  nb::class_<algo::ScheduleFile>(m, "ScheduleFile")
      .def_ro("path", &algo::ScheduleFile::path)
      .def_ro("format", &algo::ScheduleFile::format)
      .def_ro("name", &algo::ScheduleFile::name)
      .def_ro("digest", &algo::ScheduleFile::digest)
      .def_prop_ro("collective", [](const algo::ScheduleFile& f) { return std::string(algo::to_string(f.collective)); })
      .def_ro("ranks", &algo::ScheduleFile::ranks)
      .def_ro("root", &algo::ScheduleFile::root)
      .def_ro("count", &algo::ScheduleFile::count)
      .def_ro("granularity", &algo::ScheduleFile::granularity)
      .def("describe", &algo::ScheduleFile::describe)
      .def("schedule", &file_schedule, "count"_a = nb::none(),
           "The schedule at `count` elements (a JSON file: its own count; MSCCL XML: a multiple of granularity)");
  m.def("load_schedule_file", &algo::load_schedule_file, "path"_a);

  // MSCCL XML interchange (python/src/msccl.cpp, where the library has it).
  bind_msccl(m);
}
