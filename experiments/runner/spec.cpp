#include "experiments/runner/spec.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "common/json_input.hpp"
#include "experiments/runner/grid.hpp"
#include "experiments/runner/provenance.hpp"
#include "simulator/calibration.hpp"
#include "topologies/load.hpp"
#include "topologies/transports.hpp"

namespace fs = std::filesystem;

namespace topocoll::experiments {

namespace {

// `text` as a whole decimal integer in [lo, hi]; nullopt otherwise (the caller names the key).
std::optional<int> int_in(const std::string& text, int lo, int hi) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// --- the spec -------------------------------------------------------------------------------

constexpr const char* kTopKeys =
    "description, engine, collective, repetitions, calibration, protocol, nccl_model, nccl_version, nccl_env, grid, "
    "real";
constexpr const char* kNcclEnvKeys = "NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, NCCL_NVLS_ENABLE";
constexpr const char* kGridKeys =
    "topologies, nodes, fabric, oversubscription, transport, algorithms, schedules, sizes, matrices, dtypes, channels, "
    "slice, op, ranks";
constexpr const char* kSizeKeys = "min, max, factor";
constexpr const char* kRealKeys = "backend, mpirun, iters, warmup, check, timeout, bench";

class SpecReader {
 public:
  explicit SpecReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    const YAML::Mark m = n.Mark();
    if (m.line >= 0) throw InputError(fmt::format("{}:{}: {}", path_, m.line + 1, what));
    throw InputError(fmt::format("{}: {}", path_, what));
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(fmt::format("{}: {}", path_, what)); }

  void keys(const YAML::Node& map, const std::string& where, const char* allowed) const {
    if (!map.IsMap()) fail(map, fmt::format("{}: expected a mapping of {}", where, allowed));
    const std::string list = fmt::format(", {}, ", allowed);
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) fail(kv.first, fmt::format("a key of {} is not a name (allowed: {})", where, allowed));
      const std::string key = kv.first.as<std::string>();
      if (list.find(", " + key + ", ") == std::string::npos)
        fail(kv.first, fmt::format("unknown key '{}' in {} (allowed: {})", json_input::escaped(key), where, allowed));
    }
  }

  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, fmt::format("{}: expected a single value", key));
    return n.as<std::string>();
  }

  // A scalar or a list of scalars -> strings; an empty list is "empty grid".
  std::vector<std::string> list(const YAML::Node& n, const std::string& key) const {
    std::vector<std::string> v;
    if (n.IsScalar())
      v.push_back(n.as<std::string>());
    else if (n.IsSequence()) {
      for (const auto& e : n) v.push_back(scalar(e, key));
    } else if (n.IsNull()) {
    } else {
      fail(n, fmt::format("{}: expected a value or a list of values", key));
    }
    if (v.empty()) fail(n, fmt::format("{} is empty: the grid has no points (expected at least one value)", key));
    return v;
  }

  int integer(const YAML::Node& n, const std::string& key, int lo, int hi) const {
    const std::string s = scalar(n, key);
    try {
      std::size_t used = 0;
      const long v = std::stol(s, &used);
      if (used == s.size() && v >= lo && v <= hi) return static_cast<int>(v);
    } catch (const std::exception&) {
    }
    fail(n, fmt::format("{} {}: expected an integer from {} to {}", key, s, lo, hi));
  }

  double number(const YAML::Node& n, const std::string& key, double lo) const {
    const std::string s = scalar(n, key);
    try {
      std::size_t used = 0;
      const double v = std::stod(s, &used);
      if (used == s.size() && std::isfinite(v) && v >= lo) return v;
    } catch (const std::exception&) {
    }
    fail(n, fmt::format("{} {}: expected a number >= {:g}", key, s, lo));
  }
  // A number in [lo, hi], hi being the limit named `limit`.
  double number(const YAML::Node& n, const std::string& key, double lo, double hi, const char* limit) const {
    const double v = number(n, key, lo);
    if (!(v <= hi)) fail(n, fmt::format("{} {}: expected at most {:g} (the limit {})", key, scalar(n, key), hi, limit));
    return v;
  }

  bool boolean(const YAML::Node& n, const std::string& key) const {
    const std::string s = scalar(n, key);
    if (s == "true") return true;
    if (s == "false") return false;
    fail(n, fmt::format("{} {}: expected true or false", key, s));
  }

 private:
  std::string path_;
};

}  // namespace

std::string read_spec_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(fmt::format("{}: cannot read the experiment spec", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

namespace {

std::string resolve(const std::string& dir, const std::string& name) {
  if (name.empty() || fs::path(name).is_absolute()) return name;
  const fs::path p = fs::path(dir) / name;
  return p.lexically_normal().string();
}

bool is_file_name(const std::string& t) {
  const auto ends = [&](const char* s) {
    return t.size() > std::strlen(s) && t.compare(t.size() - std::strlen(s), std::strlen(s), s) == 0;
  };
  return ends(".xml") || ends(".yaml") || ends(".yml");
}

}  // namespace

ExpSpec load_exp_spec(const std::string& path) {
  ExpSpec s;
  s.path = path;
  const std::string bytes = read_spec_file(path);
  s.sha256 = sha256_hex(bytes);
  const fs::path abs = fs::absolute(path).lexically_normal();
  s.dir = fs::path(path).parent_path().string();
  if (s.dir.empty()) s.dir = ".";
  s.name = abs.parent_path().filename().string();
  SpecReader r(path);
  YAML::Node root;
  try {
    root = YAML::Load(bytes);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) r.fail("expected a mapping with the keys " + std::string(kTopKeys));
  r.keys(root, "the spec", kTopKeys);
  for (const char* required : {"engine", "grid"})
    if (!root[required]) r.fail(fmt::format("missing key '{}' (required: engine, grid)", required));

  if (root["description"]) s.description = r.scalar(root["description"], "description");
  s.engine = r.scalar(root["engine"], "engine");
  if (s.engine != "analytic" && s.engine != "simgrid" && s.engine != "real")
    r.fail(root["engine"], fmt::format("engine {}: unknown engine, expected analytic, simgrid or real", s.engine));
  const bool real = s.engine == "real";
  if (root["collective"]) {
    try {
      s.collective = algo::parse_collective(r.scalar(root["collective"], "collective"));
    } catch (const InputError& e) {
      r.fail(root["collective"], fmt::format("collective: {}", e.what()));
    }
  }
  const bool alltoallv = s.collective == algo::Collective::AllToAllV;
  if (root["repetitions"]) s.repetitions = r.integer(root["repetitions"], "repetitions", 1, 1000);
  if (root["calibration"]) {
    s.calibration = r.scalar(root["calibration"], "calibration");
    s.calibration_path = resolve(s.dir, s.calibration);
    std::error_code ec;  // a name the file system refuses (too long, a loop) is no such file
    if (!fs::exists(s.calibration_path, ec))
      r.fail(root["calibration"],
             fmt::format("calibration {}: no such file (looked for {})", s.calibration, s.calibration_path));
  }
  if (root["protocol"]) {
    s.protocol = r.scalar(root["protocol"], "protocol");
    if (s.protocol != "auto" && !sim::parse_protocol(s.protocol))
      r.fail(root["protocol"], fmt::format("protocol {}: expected auto, LL, LL128 or Simple", s.protocol));
    if (real) r.fail(root["protocol"], "protocol: only for simulated engines");
  }
  if (root["nccl_model"]) s.nccl_model = r.boolean(root["nccl_model"], "nccl_model");
  // NCCL's tuner has no model for all-to-all (grouped send/recv): no model points, and asking
  // for them is an error.
  if (s.collective == algo::Collective::AllToAll || alltoallv) {
    if (root["nccl_model"] && s.nccl_model)
      r.fail(root["nccl_model"], fmt::format("nccl_model: NCCL's tuner has no model for {} (grouped send/recv)",
                                             algo::to_string(s.collective)));
    s.nccl_model = false;
  }
  if (real) s.nccl_model = false;  // the model predicts stock NCCL on GPUs, not this run
  if (root["nccl_version"]) {
    try {
      s.nccl.version = sim::parse_nccl_version(r.scalar(root["nccl_version"], "nccl_version"), "nccl_version");
    } catch (const InputError& e) {
      r.fail(root["nccl_version"], e.what());
    }
  }
  if (root["nccl_env"]) {
    const YAML::Node ne = root["nccl_env"];
    r.keys(ne, "nccl_env", kNcclEnvKeys);
    for (const auto& kv : ne) {
      const std::string key = kv.first.as<std::string>();
      try {
        sim::set_nccl_env(s.nccl, key, r.scalar(kv.second, "nccl_env." + key), "nccl_env");
      } catch (const InputError& e) {
        r.fail(kv.second, e.what());
      }
    }
    try {
      sim::check_nccl_options(s.nccl);
    } catch (const InputError& e) {
      r.fail(ne, e.what());
    }
  }

  if (s.nccl_model && s.collective != algo::Collective::AllReduce &&
      !sim::nccl_tuning_tables(s.nccl.version).models_nvls)
    r.fail(root["nccl_version"] ? root["nccl_version"] : root["collective"],
           fmt::format("collective {}: the NCCL {} model covers allreduce only (nccl_version 2.28.9, or nccl_model: "
                       "false)",
                       algo::to_string(s.collective), sim::to_string(s.nccl.version)));

  const YAML::Node g = root["grid"];
  r.keys(g, "grid", kGridKeys);
  const char* size_key = alltoallv ? "matrices" : "sizes";
  for (const char* required : {"algorithms", size_key})
    if (!g[required] && !(std::string(required) == "algorithms" && g["schedules"]))
      r.fail(g, fmt::format("grid: missing key '{}' (required: algorithms or schedules, {}; topologies unless "
                            "engine real)",
                            required, alltoallv ? "matrices (collective alltoallv: size matrix files)" : "sizes"));
  if (alltoallv && g["sizes"])
    r.fail(g["sizes"],
           "grid.sizes: collective alltoallv runs the calls of its size matrices: grid.matrices (files), not a sweep");
  if (!alltoallv && g["matrices"])
    r.fail(g["matrices"], fmt::format("grid.matrices: size matrices are for collective alltoallv; the collective is "
                                      "{}: use grid.sizes",
                                      algo::to_string(s.collective)));

  // Topologies: presets or files (relative to the spec's folder). Checked by loading one node.
  if (real) {
    s.topologies = g["topologies"] ? r.list(g["topologies"], "grid.topologies") : std::vector<std::string>{"local"};
    if (s.topologies != std::vector<std::string>{"local"})
      r.fail(g["topologies"], fmt::format("grid.topologies {}: engine real runs on this machine: expected local",
                                          fmt::join(s.topologies, ",")));
    s.topology_paths = s.topologies;
  } else {
    if (!g["topologies"])
      r.fail(g, "grid: missing key 'topologies' (a preset such as dgx-h100, or a .xml / .yaml file)");
    s.topologies = r.list(g["topologies"], "grid.topologies");
    for (const std::string& t : s.topologies) {
      s.topology_paths.push_back(is_file_name(t) ? resolve(s.dir, t) : t);
      topo::TopologyOptions o;
      o.topology = s.topology_paths.back();
      o.nodes = is_file_name(t) ? std::nullopt : std::optional<int>(1);
      try {
        (void)topo::load_topology(o);
      } catch (const InputError& e) {
        r.fail(g["topologies"], fmt::format("grid.topologies {}: {}", t, e.what()));
      }
    }
  }
  if (g["nodes"]) {
    for (const std::string& n : r.list(g["nodes"], "grid.nodes")) {
      if (const auto v = int_in(n, 1, topo::Topology::kMaxNodes)) {
        s.nodes.emplace_back(*v);
        continue;
      }
      r.fail(g["nodes"], fmt::format("grid.nodes {}: expected node counts from 1 to {}", n, topo::Topology::kMaxNodes));
    }
    if (real) r.fail(g["nodes"], "grid.nodes: engine real runs on this machine: use grid.ranks");
  } else {
    s.nodes.emplace_back(std::nullopt);
  }
  if (g["oversubscription"]) s.oversubscription = r.number(g["oversubscription"], "grid.oversubscription", 1.0);
  if (g["transport"]) {
    const std::string name = r.scalar(g["transport"], "grid.transport");
    try {
      s.transport = std::string(topo::find_transport(name).name);
    } catch (const InputError& e) {
      r.fail(g["transport"], fmt::format("grid.transport: {}", e.what()));
    }
  }
  if (g["fabric"]) {
    for (const std::string& f : r.list(g["fabric"], "grid.fabric")) {
      try {
        (void)topo::parse_fabric(f);
      } catch (const InputError& e) {
        r.fail(g["fabric"], fmt::format("grid.fabric: {}", e.what()));
      }
      s.fabrics.emplace_back(f);
    }
  } else {
    s.fabrics.emplace_back(std::nullopt);
  }

  // Algorithms: registered algorithms of the collective; `mpi` (MPI_Allreduce) only for engine
  // real and allreduce.
  const bool allreduce = s.collective == algo::Collective::AllReduce;
  if (g["algorithms"]) s.algorithms = r.list(g["algorithms"], "grid.algorithms");
  for (const std::string& a : s.algorithms) {
    if (a == "mpi") {
      if (!real) r.fail(g["algorithms"], "grid.algorithms mpi: MPI_Allreduce is measured only (engine real)");
      if (!allreduce)
        r.fail(g["algorithms"], fmt::format("grid.algorithms mpi: MPI_Allreduce is an allreduce, the collective is {}",
                                            algo::to_string(s.collective)));
      continue;
    }
    const auto& reg = algo::registry();
    const auto it = std::find_if(reg.begin(), reg.end(), [&](const algo::Algorithm& x) { return x.name == a; });
    if (it == reg.end() || it->collective != s.collective) {
      std::vector<std::string> known;
      for (const auto& x : reg)
        if (x.collective == s.collective) known.push_back(x.name);
      r.fail(g["algorithms"],
             fmt::format("grid.algorithms {}: {}, expected one of the {} algorithms {}{}", a,
                         it == reg.end() ? "unknown algorithm"
                                         : fmt::format("an algorithm for {}", algo::to_string(it->collective)),
                         algo::to_string(s.collective),
                         known.empty() ? "(none yet)" : fmt::format("{}", fmt::join(known, ", ")),
                         real && allreduce ? ", mpi" : ""));
    }
  }
  if (std::set<std::string>(s.algorithms.begin(), s.algorithms.end()).size() != s.algorithms.size())
    r.fail(g["algorithms"], "grid.algorithms: an algorithm is listed twice");

  // Schedule files: loaded and proven now, so that a bad file stops the spec before any point.
  if (g["schedules"]) {
    s.schedules = r.list(g["schedules"], "grid.schedules");
    std::vector<std::string> paths;
    for (const std::string& f : s.schedules) paths.push_back(resolve(s.dir, f));
    try {
      s.schedule_set = std::make_shared<const algo::ScheduleFileSet>(
          algo::load_schedule_files(paths, {.verify = true, .in_place = real}));
    } catch (const InputError& e) {
      r.fail(g["schedules"], fmt::format("grid.schedules: {}", e.what()));
    }
    for (const auto& f : s.schedule_set->files)
      if (f->collective != s.collective)
        r.fail(g["schedules"], fmt::format("grid.schedules: {} is written for {}; the spec's collective is {}", f->path,
                                           algo::to_string(f->collective), algo::to_string(s.collective)));
    for (const algo::Algorithm& a : s.schedule_set->algorithms)
      if (std::find(s.algorithms.begin(), s.algorithms.end(), a.name) != s.algorithms.end())
        r.fail(g["schedules"], fmt::format("grid.schedules: {} has the name of grid.algorithms' {}", a.name, a.name));
  }

  // Sizes: nccl-tests' -b / -e / -f; for alltoallv the size matrices.
  if (alltoallv) {
    s.matrices = r.list(g["matrices"], "grid.matrices");
    for (const std::string& m : s.matrices) {
      s.matrix_paths.push_back(resolve(s.dir, m));
      try {
        s.matrix_sizes.push_back(algo::load_alltoallv_sizes(s.matrix_paths.back()));
      } catch (const InputError& e) {
        r.fail(g["matrices"], fmt::format("grid.matrices {}: {}", m, e.what()));
      }
    }
    if (std::set<std::string>(s.matrices.begin(), s.matrices.end()).size() != s.matrices.size())
      r.fail(g["matrices"], "grid.matrices: a file is listed twice");
  } else {
    const YAML::Node sz = g["sizes"];
    r.keys(sz, "grid.sizes", kSizeKeys);
    if (!sz["min"] || !sz["max"])
      r.fail(sz, "grid.sizes: expected min and max (and factor, default 2), as -b / -e / -f");
    s.min_bytes = r.scalar(sz["min"], "grid.sizes.min");
    s.max_bytes = r.scalar(sz["max"], "grid.sizes.max");
    s.factor = sz["factor"] ? r.scalar(sz["factor"], "grid.sizes.factor") : "2";
    const auto size_check = [&](const std::string& v, const char* key) {
      std::uint64_t bytes = 0;
      try {
        bytes = cli::parse_size(v, key);
      } catch (const InputError& e) {
        r.fail(sz, e.what());
      }
      if (bytes > cli::kMaxSweepBytes)
        r.fail(sz,
               fmt::format("{} {}: larger than the size limit kMaxSweepBytes = {} (1T)", key, v, cli::kMaxSweepBytes));
    };
    size_check(s.min_bytes, "grid.sizes.min");
    size_check(s.max_bytes, "grid.sizes.max");
  }

  s.dtypes = g["dtypes"] ? r.list(g["dtypes"], "grid.dtypes") : std::vector<std::string>{"float"};
  for (const std::string& d : s.dtypes) {
    if (alltoallv) {
      try {
        (void)algo::parse_dtype(d);
      } catch (const InputError& e) {
        r.fail(g["dtypes"], fmt::format("grid.dtypes: {}", e.what()));
      }
      continue;
    }
    const YAML::Node sz = g["sizes"];
    try {
      const std::size_t elem = algo::size_of(algo::parse_dtype(d));
      (void)cli::size_sweep(s.min_bytes, s.max_bytes, s.factor, elem);
    } catch (const InputError& e) {
      r.fail(g["dtypes"] ? g["dtypes"] : sz, fmt::format("grid.sizes / dtypes: {}", e.what()));
    }
    // A fixed-count schedule file runs at its own size: the sweep must include it.
    if (s.schedule_set) try {
        (void)algo::sweep_with_files(
            *s.schedule_set, cli::size_sweep(s.min_bytes, s.max_bytes, s.factor, algo::size_of(algo::parse_dtype(d))),
            true, algo::parse_dtype(d));
      } catch (const InputError& e) {
        r.fail(g["schedules"], fmt::format("grid.schedules with dtype {}: {}", d, e.what()));
      }
  }
  // An all-to-allv schedule file runs at its own matrix: the grid must list it.
  if (alltoallv && s.schedule_set)
    for (const auto& f : s.schedule_set->files)
      if (std::none_of(s.matrix_sizes.begin(), s.matrix_sizes.end(),
                       [&](const auto& m) { return f->sizes && *m == *f->sizes; }))
        r.fail(g["schedules"],
               fmt::format("grid.schedules: {} runs at its own size matrix ({}), which is none of grid.matrices",
                           f->path, f->sizes ? f->sizes->describe() : "none"));
  // Default: simulated engines run with what stock NCCL would (like `topocoll sim`); real runs 2.
  s.channels = g["channels"] ? r.list(g["channels"], "grid.channels") : std::vector<std::string>{real ? "2" : "nccl"};
  for (const std::string& c : s.channels) {
    if (c == "nccl" && !real) continue;
    if (int_in(c, 1, 64)) continue;
    r.fail(g["channels"], fmt::format("grid.channels {}: expected an integer from 1 to 64{}", c,
                                      real ? "" : ", or nccl (what stock NCCL would run with)"));
  }
  if (g["slice"]) s.slice = r.scalar(g["slice"], "grid.slice");
  std::uint64_t slice = 0;
  try {
    slice = cli::parse_size(s.slice, "grid.slice");
  } catch (const InputError& e) {
    r.fail(g["slice"], e.what());
  }
  if (slice == 0) r.fail(g["slice"], "grid.slice 0: expected at least 1 byte");
  if (g["op"]) {
    s.op = r.scalar(g["op"], "grid.op");
    try {
      (void)algo::parse_op(s.op);
    } catch (const InputError& e) {
      r.fail(g["op"], fmt::format("grid.op: {}", e.what()));
    }
  }
  if (g["ranks"]) {
    if (!real)
      r.fail(g["ranks"], "grid.ranks: only for engine real (simulated rank counts come from topologies x nodes)");
    for (const std::string& n : r.list(g["ranks"], "grid.ranks")) {
      if (const auto v = int_in(n, 1, 4096)) {
        s.ranks.push_back(*v);
        continue;
      }
      r.fail(g["ranks"], fmt::format("grid.ranks {}: expected rank counts from 1 to 4096", n));
    }
  } else if (real) {
    r.fail(g, "grid: missing key 'ranks' (engine real: the mpirun -np values)");
  }

  // alltoallv: every matrix runs on the clusters (rank counts) of its size; one that fits none of
  // the grid's is a mistake.
  if (alltoallv) {
    std::vector<std::string> where;  // "dgx-h100 x 2 nodes: 16 ranks", for the message
    std::set<int> counts;
    if (real) {
      counts.insert(s.ranks.begin(), s.ranks.end());
      where.push_back(fmt::format("grid.ranks {}", fmt::join(s.ranks, ", ")));
    } else {
      for (std::size_t ti = 0; ti < s.topologies.size(); ++ti)
        for (const auto& nodes : s.nodes) {
          topo::TopologyOptions o;
          o.topology = s.topology_paths[ti];
          o.nodes = nodes;
          int p = 0;
          try {
            p = topo::load_topology(o).num_ranks();
          } catch (const InputError& e) {
            r.fail(g["nodes"] ? g["nodes"] : g["topologies"],
                   fmt::format("grid.topologies {} x nodes {}: {}", s.topologies[ti], grid_value(nodes), e.what()));
          }
          s.cluster_ranks[fmt::format("{}|{}", s.topologies[ti], grid_value(nodes))] = p;
          counts.insert(p);
          where.push_back(fmt::format("{} x nodes {}: {}", s.topologies[ti], grid_value(nodes), p));
        }
    }
    for (std::size_t i = 0; i < s.matrices.size(); ++i)
      if (!counts.count(s.matrix_sizes[i]->ranks()))
        r.fail(
            g["matrices"],
            fmt::format("grid.matrices {}: a matrix of {} ranks, and the grid has no job of {} ranks ({})",
                        s.matrices[i], s.matrix_sizes[i]->ranks(), s.matrix_sizes[i]->ranks(), fmt::join(where, "; ")));
  }

  if (root["real"]) {
    if (!real) r.fail(root["real"], "real: only for engine real");
    const YAML::Node rn = root["real"];
    r.keys(rn, "real", kRealKeys);
    if (rn["backend"]) s.real.backend = r.scalar(rn["backend"], "real.backend");
    if (rn["mpirun"]) s.real.mpirun = r.list(rn["mpirun"], "real.mpirun");
    if (rn["iters"]) s.real.iters = r.integer(rn["iters"], "real.iters", 1, 100000);
    if (rn["warmup"]) s.real.warmup = r.integer(rn["warmup"], "real.warmup", 0, 100000);
    if (rn["check"]) s.real.check = r.integer(rn["check"], "real.check", 0, 1);
    if (rn["timeout"])
      s.real.timeout_s = r.number(rn["timeout"], "real.timeout", 1.0, cli::kMaxTimeoutSeconds, "kMaxTimeoutSeconds");
    if (rn["bench"]) s.real.bench = resolve(s.dir, r.scalar(rn["bench"], "real.bench"));
  }
  return s;
}

std::vector<std::string> ExpSpec::run_names() const {
  std::vector<std::string> out = algorithms;
  if (schedule_set)
    for (const algo::Algorithm& a : schedule_set->algorithms) out.push_back(a.name);
  return out;
}

const algo::ScheduleFile* ExpSpec::file_named(const std::string& n) const {
  if (schedule_set)
    for (std::size_t i = 0; i < schedule_set->algorithms.size(); ++i)
      if (schedule_set->algorithms[i].name == n) return schedule_set->files[i].get();
  return nullptr;
}

const algo::Algorithm* ExpSpec::file_algorithm(const std::string& n) const {
  if (schedule_set)
    for (const algo::Algorithm& a : schedule_set->algorithms)
      if (a.name == n) return &a;
  return nullptr;
}

}  // namespace topocoll::experiments
