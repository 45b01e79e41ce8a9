#include "tools/algo_commands.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "algorithms/ir/msccl_xml.hpp"
#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/schedule_file.hpp"
#include "algorithms/verifier.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "topologies/load.hpp"

namespace topocoll::tools {

std::uint64_t parse_size(const std::string& text, const char* flag) {
  return cli::parse_size(text, flag);
}

namespace {

struct Job {
  topo::Topology topology;
  algo::Layout layout;
};

Job load_job(const AlgoArgs& a) {
  topo::Topology t = topo::load_topology(topology_options(a.topo));
  algo::Layout l = algo::layout_of(t);
  return {std::move(t), std::move(l)};
}

// verify --layout NxG (uniform_layout), or the topology's layout; --nvls / --sharp set what the
// hardware can reduce (on a topology: as if it could).
algo::Layout layout_of(const AlgoArgs& a) {
  algo::Layout l;
  if (!a.layout.empty()) {
    if (!a.topo.topology.empty()) throw InputError("--layout and --topology: give one of them");
    const std::size_t x = a.layout.find('x');
    auto number = [&](const std::string& text) {
      if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(fmt::format("--layout {}: expected NODESxRANKS_PER_NODE, e.g. 128x8", a.layout));
      return std::stoi(text);
    };
    if (x == std::string::npos)
      throw InputError(fmt::format("--layout {}: expected NODESxRANKS_PER_NODE, e.g. 128x8", a.layout));
    const int nodes = number(a.layout.substr(0, x)), per_node = number(a.layout.substr(x + 1));
    if (nodes < 1 || per_node < 1 || static_cast<long>(nodes) * per_node > algo::kMaxRanks)
      throw InputError(
          fmt::format("--layout {}: expected 1 to {} ranks in all, at least 1 x 1", a.layout, algo::kMaxRanks));
    if (a.nvlink_domain < 1 || a.nvlink_domain > nodes)
      throw InputError(
          fmt::format("--nvlink-domain {}: expected 1 to {} nodes (the layout's)", a.nvlink_domain, nodes));
    l = algo::uniform_layout(nodes, per_node,
                             {.nvls = a.nvls, .sharp = a.topo.sharp, .nodes_per_nvlink_domain = a.nvlink_domain});
  } else {
    if (a.nvlink_domain != 1) throw InputError("--nvlink-domain needs --layout");
    l = load_job(a).layout;
    if (a.nvls) l.nvls.assign(static_cast<std::size_t>(l.nodes), true);
    if (a.topo.sharp) l.sharp = true;
  }
  return l;
}

algo::Tuning tuning_of(const AlgoArgs& a) {
  if (a.channels < 1 || a.channels > 64) throw InputError(fmt::format("--channels {}: expected 1 to 64", a.channels));
  algo::Tuning t;
  t.channels = a.channels;
  t.slice_bytes = parse_size(a.slice, "--slice");
  if (t.slice_bytes == 0) throw InputError("--slice 0: expected at least 1 byte");
  return t;
}

algo::CollectiveArgs args_of(const AlgoArgs& a, const algo::Algorithm& alg, const algo::Layout& l) {
  algo::CollectiveArgs c;
  c.collective = alg.collective;
  c.ranks = l.ranks;
  c.dtype = algo::parse_dtype(a.dtype);
  c.op = algo::parse_op(a.op);
  c.root = a.root;
  if (a.root < 0 || a.root >= l.ranks)
    throw InputError(fmt::format("--root {}: expected a rank from 0 to {}", a.root, l.ranks - 1));
  c.count = a.count.empty()
                ? static_cast<std::uint64_t>(l.ranks) * static_cast<std::uint64_t>(std::max(a.channels, 2)) * 64
                : parse_size(a.count, "--count");
  // The largest buffer (an allgather's output, a reduce-scatter's input: count x ranks) within
  // the size limit of the sweeps: no size wraps, no generator runs for days.
  const std::uint64_t per_rank_max =
      cli::kMaxSweepBytes / algo::size_of(c.dtype) /
      (c.collective == algo::Collective::AllGather || c.collective == algo::Collective::ReduceScatter
           ? static_cast<std::uint64_t>(l.ranks)
           : 1);
  if (c.count > per_rank_max)
    throw InputError(
        fmt::format("--count {}: more than {} elements of {} on {} ranks (the limit kMaxSweepBytes = {} "
                    "bytes per buffer)",
                    a.count, per_rank_max, a.dtype, l.ranks, cli::kMaxSweepBytes));
  // An all-to-allv's sizes are its matrix's (--sizes; without it the algorithm says it needs one).
  if (c.collective == algo::Collective::AllToAllV && !a.sizes.empty()) {
    c.count = 0;
    c.sizes = algo::load_alltoallv_sizes(a.sizes);
    if (c.sizes->ranks() != l.ranks)
      throw InputError(
          fmt::format("--sizes {}: a size matrix of {} ranks; the job has {}", a.sizes, c.sizes->ranks(), l.ranks));
  }
  return c;
}

std::string human_bytes(std::uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", b / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.2f} KiB", b / double(1ull << 10));
  return fmt::format("{} B", b);
}

void print_result(std::ostream& out, const std::string& name, int ranks, const algo::VerifyResult& r, double seconds) {
  out << fmt::format("{:<20} {:>6} {:>12} {:>7} {:>12} {:>12} {:>8.2f}  {}\n", name, ranks, r.operations, r.steps,
                     human_bytes(r.max_bytes_sent), human_bytes(r.max_inter_bytes_sent), seconds,
                     r.ok() ? "OK" : fmt::format("FAIL {}: {}", to_string(r.failure), r.message));
}

void print_header(std::ostream& out) {
  out << fmt::format("{:<20} {:>6} {:>12} {:>7} {:>12} {:>12} {:>8}  {}\n", "algorithm", "ranks", "operations", "steps",
                     "bytes/rank", "inter/rank", "time(s)", "result");
}

}  // namespace

algo::Collective parse_collective_flag(const std::string& value, const char* flag) {
  try {
    return algo::parse_collective(value);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} {}: {}", flag, cli::one_line(value), e.what()));
  }
}

int algorithms_list(std::ostream& out) {
  out << fmt::format("{:<20} {:<15} {}\n", "name", "collective", "description");
  for (const algo::Algorithm& a : algo::registry())
    out << fmt::format("{:<20} {:<15} {}\n", a.name, to_string(a.collective), a.description);
  return 0;
}

int verify_command(const AlgoArgs& a, std::ostream& out) {
  std::optional<algo::Collective> collective;
  if (!a.collective.empty()) collective = parse_collective_flag(a.collective, "--collective");
  if (!a.schedule.empty()) {
    const algo::ScheduleFile f = algo::load_schedule_file(a.schedule);
    std::uint64_t count = f.count.value_or(0);
    if (!f.count) {
      if (a.count.empty())
        throw InputError(
            fmt::format("--schedule {}: a size-generic {} file: expected --count N (a positive multiple "
                        "of {})",
                        a.schedule, f.format, f.granularity));
      count = parse_size(a.count, "--count");
    }
    const algo::Schedule s = f.instantiate(f.args_at(count));
    if (collective && s.args().collective != *collective)
      throw InputError(fmt::format("--collective {}: the schedule {} is of {}, not {}", a.collective, a.schedule,
                                   algo::to_string(s.args().collective), algo::to_string(*collective)));
    print_header(out);
    const auto start = std::chrono::steady_clock::now();
    algo::VerifyOptions o;
    o.in_place = a.in_place;
    const algo::VerifyResult r = algo::verify(s, o);
    print_result(out, s.name(), s.num_ranks(), r,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return r.ok() ? 0 : 1;
  }
  if (a.topo.topology.empty() && a.layout.empty())
    throw InputError("verify needs --topology T (with --nodes N), --layout NxG or --schedule FILE.json");
  const algo::Layout layout = layout_of(a);
  const algo::Tuning t = tuning_of(a);
  bool all_ok = true;
  const std::vector<const algo::Algorithm*> algorithms = algo::select_algorithms(a.algorithm, collective);
  if (algorithms.empty())
    throw InputError(fmt::format("--collective {}: the registry has no {} algorithm yet (topocoll algorithms)",
                                 a.collective, algo::to_string(*collective)));
  print_header(out);
  for (const algo::Algorithm* alg : algorithms) {
    const algo::CollectiveArgs c = args_of(a, *alg, layout);
    const algo::Support s = alg->supports(layout, c, t);
    if (!s.ok) {
      out << fmt::format("{:<20} {:>6} not supported: {}\n", alg->name, layout.ranks, s.reason);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    algo::VerifyOptions o;
    o.in_place = a.in_place;
    o.node_of = layout.node_of;
    o.domain_of = layout.domain_of_ranks();
    const algo::VerifyResult r = algo::verify(alg->generate(layout, c, t), o);
    print_result(out, alg->name, layout.ranks, r,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    all_ok &= r.ok();
  }
  return all_ok ? 0 : 1;
}

int schedule_export(const AlgoArgs& a, std::ostream& out) {
  const Job job = load_job(a);
  const algo::Tuning t = tuning_of(a);
  const auto algs = algo::select_algorithms(a.algorithm, std::nullopt);
  if (algs.size() != 1)
    throw InputError(fmt::format("--algorithm {}: schedule export takes exactly one algorithm", a.algorithm));
  const algo::CollectiveArgs c = args_of(a, *algs.front(), job.layout);
  const algo::Support s = algs.front()->supports(job.layout, c, t);
  if (!s.ok) throw InputError(fmt::format("{} is not supported here: {}", algs.front()->name, s.reason));
  const algo::Schedule sched = algs.front()->generate(job.layout, c, t);
  if (a.format != "json" && a.format != "msccl")
    throw InputError(fmt::format("--format {}: expected json (topocoll's schedule JSON) or msccl (MSCCL XML)",
                                 cli::one_line(a.format)));
  if (a.format == "msccl") {
    std::ostringstream xml;  // refused (switch groups, size matrices) before the output is opened
    algo::write_msccl_xml(sched, xml);
    Output output(a.output, out);
    output.stream() << xml.str();
    output.close();
    return 0;
  }
  Output output(a.output, out);
  algo::write_schedule_json(sched, output.stream());
  output.close();
  return 0;
}

}  // namespace topocoll::tools
