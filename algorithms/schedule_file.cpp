#include "algorithms/schedule_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "algorithms/ir/msccl_xml.hpp"
#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"

namespace topocoll::algo {
namespace {

// The same programs, switch groups and channel patterns under another call's header (a JSON
// schedule run with the job's dtype and op: the programs count elements, not bytes).
Schedule with_args(const Schedule& s, const CollectiveArgs& args) {
  auto shared = std::make_shared<const Schedule>(s);
  Schedule out(s.name(), args, s.num_channels(), s.scratch_count(),
               [shared](int rank, Program& p) { p = shared->program(rank); });
  for (const SwitchGroup& g : s.switch_groups()) out.add_switch_group(g);
  for (int ch = 0; ch < s.num_channels(); ++ch)
    if (s.pattern(ch) != ChannelPattern::Pipeline) out.set_pattern(ch, s.pattern(ch));
  return out;
}

bool uses_kind(const Schedule& s, SwitchKind k) {
  for (const SwitchGroup& g : s.switch_groups())
    if (g.kind == k) return true;
  return false;
}

ScheduleFile json_file(const std::string& path, const std::string& text) {
  auto sched = std::make_shared<const Schedule>(read_schedule_json(text, path));
  ScheduleFile f;
  f.path = path;
  f.format = "topocoll-schedule JSON";
  f.name = sched->name();
  const CollectiveArgs& a = sched->args();
  f.collective = a.collective;
  f.ranks = a.ranks;
  f.root = a.root;
  f.dtype = a.dtype;
  f.op = a.op;
  f.count = a.count;
  f.sizes = a.sizes;
  f.instantiate = [sched](const CollectiveArgs& args) { return with_args(*sched, args); };
  return f;
}

// An MSCCL XML program: size-generic (its chunks are fractions of the buffers), float32.
ScheduleFile msccl_file(const std::string& path, const std::string& text) {
  auto prog = std::make_shared<const MscclProgram>(parse_msccl_xml(text, path));
  ScheduleFile f;
  f.path = path;
  f.format = "MSCCL XML";
  f.name = prog->name.empty() ? "msccl" : prog->name;
  f.collective = prog->collective;
  f.ranks = prog->ngpus;
  f.root = prog->root;
  f.dtype = DataType::Float32;
  f.op = ReduceOp::Sum;
  f.count = std::nullopt;
  f.granularity = count_granularity(*prog);
  f.instantiate = [prog](const CollectiveArgs& args) { return instantiate(*prog, args); };
  return f;
}

std::string fnv1a_hex(const std::string& bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

std::string first_significant(const std::string& text) {
  const std::size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string::npos) return "";
  // A UTF-8 byte-order mark before the first character.
  if (text.compare(i, 3, "\xEF\xBB\xBF") == 0) return first_significant(text.substr(i + 3));
  return text.substr(i, 1);
}

// Throws the verifier's refusal as an InputError naming the file (out of place, and in place
// when options.in_place).
void prove(const ScheduleFile& file, const Schedule& s, const Layout* l, const ScheduleFileOptions& options) {
  for (bool in_place : {false, true}) {
    if (in_place && !options.in_place) break;
    VerifyOptions o;
    o.in_place = in_place;
    if (l) {
      o.node_of = l->node_of;
      o.domain_of = l->domain_of_ranks();
    }
    const VerifyResult r = verify(s, o);
    if (!r.ok())
      throw InputError(fmt::format("{}: the verifier refuses it at {}{}: {}: {} (--no-verify runs it anyway)",
                                   file.path,
                                   s.args().sizes ? "its size matrix" : fmt::format("count {}", s.args().count),
                                   in_place ? " in place" : "", to_string(r.failure), r.message));
  }
}

}  // namespace

std::optional<std::uint64_t> ScheduleFile::bytes(DataType t) const {
  if (!count) return std::nullopt;
  CollectiveArgs a = args_at(*count);
  a.dtype = t;
  return nccl_tests_bytes(a);
}

bool ScheduleFile::sits_out(std::uint64_t b, DataType t) const {
  if (count) return *bytes(t) != b;
  if (sizes) return false;
  const std::uint64_t n = nccl_tests_args(collective, b, t, op, ranks, root).count;
  return n == 0 || n % granularity != 0;
}

std::string ScheduleFile::sits_out_line(std::uint64_t b, DataType t) const {
  if (count) return fmt::format("not run: the schedule is for {} B only", *bytes(t));
  return fmt::format("not run: counts must be multiples of {} (count {})", granularity,
                     nccl_tests_args(collective, b, t, op, ranks, root).count);
}

CollectiveArgs ScheduleFile::args_at(std::uint64_t n) const {
  CollectiveArgs a;
  a.collective = collective;
  a.count = n;
  a.dtype = dtype;
  a.op = op;
  a.ranks = ranks;
  a.root = root;
  a.sizes = sizes;
  return a;
}

std::string ScheduleFile::describe() const {
  const std::string counts = sizes   ? fmt::format("its {} only", sizes->describe())
                             : count ? fmt::format("count {} only", *count)
                                     : (granularity <= 1 ? std::string("any count")
                                                         : fmt::format("counts that are multiples of {}", granularity));
  const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
  return fmt::format("schedule file {} ({} {}, {} ranks{}, {})", path, format, to_string(collective), ranks,
                     rooted ? fmt::format(", root {}", root) : "", counts);
}

ScheduleFile load_schedule_file(const std::string& path) {
  const std::string text = read_input_file(path, "a schedule file (topocoll schedule JSON or MSCCL XML)");
  const std::string first = first_significant(text);
  if (first == "{") {
    ScheduleFile f = json_file(path, text);
    f.digest = fnv1a_hex(text);
    return f;
  }
  if (first == "<") {
    ScheduleFile f = msccl_file(path, text);
    f.digest = fnv1a_hex(text);
    return f;
  }
  throw InputError(
      fmt::format("{}: not a schedule file: expected topocoll's schedule JSON (an object, '{{') or MSCCL XML ('<'), "
                  "got {}",
                  path, first.empty() ? std::string("an empty file") : fmt::format("'{}' first", first)));
}

Algorithm as_algorithm(std::shared_ptr<const ScheduleFile> file, std::string name, ScheduleFileOptions options) {
  // What a fixed-count schedule needs of the hardware, seen once on its own count.
  bool needs_nvls = false, needs_sharp = false;
  if (file->count) {
    const Schedule s = file->instantiate(file->args_at(*file->count));
    needs_nvls = uses_kind(s, SwitchKind::Nvls);
    needs_sharp = uses_kind(s, SwitchKind::Sharp);
  }
  auto supports = [file, needs_nvls, needs_sharp](const Layout& l, const CollectiveArgs& a, const Tuning&) {
    const ScheduleFile& f = *file;
    if (a.collective != f.collective)
      return Support::no(fmt::format("{} is written for {}; this run is {}", f.path, to_string(f.collective),
                                     to_string(a.collective)));
    if (a.ranks != f.ranks || l.ranks != f.ranks)
      return Support::no(
          fmt::format("{} is written for {} ranks; the job has {} (the topology's GPUs)", f.path, f.ranks, l.ranks));
    if ((f.collective == Collective::Broadcast || f.collective == Collective::Reduce) && a.root != f.root)
      return Support::no(fmt::format("{} is written for root {}; this run's root is {}", f.path, f.root, a.root));
    if (f.sizes && (!a.sizes || !(*a.sizes == *f.sizes)))
      return Support::no(fmt::format("{} is written for its own size matrix ({}); this run's {}", f.path,
                                     f.sizes->describe(),
                                     a.sizes ? "is another (" + a.sizes->describe() + ")" : "has none"));
    if (f.count && a.count != *f.count)
      return Support::no(fmt::format(
          "{} is written for count {} ({} B of {}); this point has count {}: a JSON schedule is for one count "
          "(size it to the run with -b/-e, or export an MSCCL XML schedule, which is size-generic)",
          f.path, *f.count, *f.count * size_of(a.dtype), to_string(a.dtype), a.count));
    if (!f.count && (a.count == 0 || a.count % f.granularity != 0))
      return Support::no(
          fmt::format("{} divides its buffers into {} equal chunks per rank: count {} is not a positive multiple of {}",
                      f.path, f.granularity, a.count, f.granularity));
    if (needs_nvls && !l.nvls_everywhere())
      return Support::no(
          fmt::format("{} reduces in NVSwitches (NVLS); node {} has no NVLS", f.path, l.first_node_without_nvls()));
    if (needs_sharp && !l.sharp)
      return Support::no(fmt::format("{} reduces in the network (SHARP); the fabric has no SHARP (--sharp)", f.path));
    return Support::yes();
  };
  // Proven once per count (and per layout: the nodes and NVLink domains checked). Schedules of
  // one file are verified on one thread at a time; the memo is shared by copies of the Algorithm.
  struct Memo {
    std::mutex mutex;
    std::set<std::pair<std::uint64_t, std::vector<int>>> proven;
  };
  auto memo = std::make_shared<Memo>();
  auto generate = [file, options, memo](const Layout& l, const CollectiveArgs& a, const Tuning&) {
    Schedule s = file->instantiate(a);
    if (!options.verify) return s;
    std::lock_guard lock(memo->mutex);
    if (memo->proven.count({a.count, l.node_of})) return s;
    prove(*file, s, &l, options);
    memo->proven.insert({a.count, l.node_of});
    return s;
  };
  auto cost = [file](const Layout&, const CollectiveArgs& a, const Tuning&) {
    CostSheet c;
    c.busbw_factor = busbw_factor(a.collective, a.ranks);
    (void)file;
    return c;
  };
  return Algorithm{std::move(name), file->describe(), file->collective, supports, cost, generate};
}

std::vector<std::string> schedule_file_names(const std::vector<std::shared_ptr<const ScheduleFile>>& files) {
  std::set<std::string> taken;
  for (const Algorithm& a : registry()) taken.insert(a.name);
  std::map<std::string, int> seen;
  for (const auto& f : files) ++seen[f->name];
  std::vector<std::string> out;
  for (const auto& f : files) {
    std::string name = f->name;
    if (name.empty() || taken.count(name) || seen[f->name] > 1) {
      name = fmt::format("{}@{}", f->name, std::filesystem::path(f->path).filename().string());
      for (int i = 2; taken.count(name); ++i)
        name = fmt::format("{}@{}#{}", f->name, std::filesystem::path(f->path).filename().string(), i);
    }
    taken.insert(name);
    out.push_back(name);
  }
  return out;
}

ScheduleFileSet load_schedule_files(const std::vector<std::string>& paths, ScheduleFileOptions options) {
  ScheduleFileSet set;
  for (const std::string& p : paths) {
    auto f = std::make_shared<const ScheduleFile>(load_schedule_file(p));
    // Proven at once, before any run starts, at its own count (a size-generic file: its smallest),
    // without a layout; generate() proves it again on the job's nodes and NVLink domains.
    if (options.verify) {
      prove(*f, f->instantiate(f->args_at(f->count ? *f->count : f->granularity)), {}, options);
    }
    set.files.push_back(std::move(f));
  }
  const std::vector<std::string> names = schedule_file_names(set.files);
  for (std::size_t i = 0; i < set.files.size(); ++i)
    set.algorithms.push_back(as_algorithm(set.files[i], names[i], options));
  return set;
}

}  // namespace topocoll::algo

namespace topocoll::algo {

std::vector<std::uint64_t> sweep_with_files(const ScheduleFileSet& set, std::vector<std::uint64_t> sweep,
                                            bool sizes_given, DataType dtype) {
  if (set.files.empty()) return sweep;
  if (!sizes_given) {
    std::set<std::uint64_t> own;
    bool all_fixed = true;
    for (const auto& f : set.files) {
      if (f->count)
        own.insert(*f->bytes(dtype));
      else
        all_fixed = false;
    }
    if (all_fixed) sweep.assign(own.begin(), own.end());
  }
  for (const auto& f : set.files) {
    if (!f->count) continue;
    const std::uint64_t b = *f->bytes(dtype);
    if (std::find(sweep.begin(), sweep.end(), b) == sweep.end())
      throw InputError(fmt::format(
          "{}: written for {} B ({} elements of {}); the sizes of the run ({} to {} B, {} of them) do not include it",
          f->path, b, *f->count, to_string(dtype), sweep.empty() ? 0 : sweep.front(), sweep.empty() ? 0 : sweep.back(),
          sweep.size()));
  }
  return sweep;
}

std::shared_ptr<const AllToAllVSizes> run_alltoallv_sizes(Collective collective, const std::string& path,
                                                          const std::vector<std::shared_ptr<const ScheduleFile>>& files,
                                                          int ranks) {
  if (collective != Collective::AllToAllV) {
    if (!path.empty())
      throw InputError(fmt::format("--sizes {}: a size matrix is for --collective alltoallv; this run is {}", path,
                                   to_string(collective)));
    return nullptr;
  }
  std::shared_ptr<const AllToAllVSizes> m;
  std::string from;
  if (!path.empty()) {
    m = load_alltoallv_sizes(path);
    from = "--sizes " + path;
  } else {
    for (const auto& f : files)
      if (f->sizes) {
        m = f->sizes;
        from = f->path;
        break;
      }
  }
  if (!m)
    throw InputError(
        "--collective alltoallv: no size matrix: expected --sizes FILE (one row of element counts per rank: what "
        "rank i sends rank j) or an alltoallv schedule file");
  if (ranks > 0 && m->ranks() != ranks)
    throw InputError(fmt::format("{}: a size matrix of {} ranks; the job has {}", from, m->ranks(), ranks));
  for (const auto& f : files)
    if (f->sizes && !(*f->sizes == *m))
      throw InputError(fmt::format("{}: written for another size matrix ({}) than {} ({})", f->path,
                                   f->sizes->describe(), from, m->describe()));
  return m;
}

}  // namespace topocoll::algo
