#include "tools/exp_command.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "common/records.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "tools/topo_commands.hpp"
#include "topologies/load.hpp"

namespace fs = std::filesystem;

namespace topocoll::tools {

// --- SHA-256 (FIPS 180-4), for the spec hash -------------------------------------------------

std::string sha256_hex(const std::string& bytes) {
  static constexpr std::array<std::uint32_t, 64> k = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  auto rotr = [](std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  // Message, then 0x80, zeros to 56 mod 64, then the bit length big-endian.
  std::string m = bytes;
  const std::uint64_t bits = static_cast<std::uint64_t>(bytes.size()) * 8;
  m.push_back(static_cast<char>(0x80));
  while (m.size() % 64 != 56) m.push_back('\0');
  for (int i = 7; i >= 0; --i) m.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  for (std::size_t block = 0; block < m.size(); block += 64) {
    std::array<std::uint32_t, 64> w{};
    for (int i = 0; i < 16; ++i)
      for (int b = 0; b < 4; ++b) w[i] = (w[i] << 8) | static_cast<unsigned char>(m[block + 4 * i + b]);
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::array<std::uint32_t, 8> v = h;
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
      const std::uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
      const std::uint32_t t1 = v[7] + s1 + ch + k[i] + w[i];
      const std::uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
      const std::uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
      const std::uint32_t t2 = s0 + maj;
      v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
    }
    for (int i = 0; i < 8; ++i) h[i] += v[i];
  }
  std::string hex;
  for (std::uint32_t x : h) hex += fmt::format("{:08x}", x);
  return hex;
}

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

constexpr const char* kTopKeys = "description, engine, repetitions, calibration, protocol, nccl_model, grid, real";
constexpr const char* kGridKeys =
    "topologies, nodes, fabric, oversubscription, algorithms, sizes, dtypes, channels, slice, op, ranks";
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
      const std::string key = kv.first.as<std::string>();
      if (list.find(", " + key + ", ") == std::string::npos)
        fail(kv.first, fmt::format("unknown key '{}' in {} (allowed: {})", key, where, allowed));
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

  bool boolean(const YAML::Node& n, const std::string& key) const {
    const std::string s = scalar(n, key);
    if (s == "true") return true;
    if (s == "false") return false;
    fail(n, fmt::format("{} {}: expected true or false", key, s));
  }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(fmt::format("{}: cannot read the experiment spec", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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
  const std::string bytes = read_file(path);
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
  if (root["repetitions"]) s.repetitions = r.integer(root["repetitions"], "repetitions", 1, 1000);
  if (root["calibration"]) {
    s.calibration = r.scalar(root["calibration"], "calibration");
    s.calibration_path = resolve(s.dir, s.calibration);
    if (!fs::exists(s.calibration_path))
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
  if (real) s.nccl_model = false;  // the model predicts stock NCCL on GPUs, not this run

  const YAML::Node g = root["grid"];
  r.keys(g, "grid", kGridKeys);
  for (const char* required : {"algorithms", "sizes"})
    if (!g[required])
      r.fail(g, fmt::format("grid: missing key '{}' (required: algorithms, sizes; topologies unless engine real)",
                            required));

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
      if (const auto v = int_in(n, 1, 2048)) {
        s.nodes.emplace_back(*v);
        continue;
      }
      r.fail(g["nodes"], fmt::format("grid.nodes {}: expected node counts from 1 to 2048", n));
    }
    if (real) r.fail(g["nodes"], "grid.nodes: engine real runs on this machine: use grid.ranks");
  } else {
    s.nodes.emplace_back(std::nullopt);
  }
  if (g["oversubscription"]) s.oversubscription = r.number(g["oversubscription"], "grid.oversubscription", 1.0);
  if (g["fabric"]) {
    for (const std::string& f : r.list(g["fabric"], "grid.fabric")) {
      TopoArgs ta;
      ta.fabric = f;
      try {
        (void)topology_options(ta);
      } catch (const InputError& e) {
        r.fail(g["fabric"], fmt::format("grid.fabric: {}", e.what()));
      }
      s.fabrics.emplace_back(f);
    }
  } else {
    s.fabrics.emplace_back(std::nullopt);
  }

  // Algorithms: registered allreduce algorithms; `mpi` (MPI_Allreduce) only for engine real.
  s.algorithms = r.list(g["algorithms"], "grid.algorithms");
  for (const std::string& a : s.algorithms) {
    if (a == "mpi") {
      if (!real) r.fail(g["algorithms"], "grid.algorithms mpi: MPI_Allreduce is measured only (engine real)");
      continue;
    }
    const auto& reg = algo::registry();
    const auto it = std::find_if(reg.begin(), reg.end(), [&](const algo::Algorithm& x) {
      return x.name == a && x.collective == algo::Collective::AllReduce;
    });
    if (it == reg.end()) {
      std::vector<std::string> known;
      for (const auto& x : reg)
        if (x.collective == algo::Collective::AllReduce) known.push_back(x.name);
      r.fail(g["algorithms"], fmt::format("grid.algorithms {}: unknown algorithm, expected one of {}{}", a,
                                          fmt::join(known, ", "), real ? ", mpi" : ""));
    }
  }
  if (std::set<std::string>(s.algorithms.begin(), s.algorithms.end()).size() != s.algorithms.size())
    r.fail(g["algorithms"], "grid.algorithms: an algorithm is listed twice");

  // Sizes: nccl-tests' -b / -e / -f.
  const YAML::Node sz = g["sizes"];
  r.keys(sz, "grid.sizes", kSizeKeys);
  if (!sz["min"] || !sz["max"]) r.fail(sz, "grid.sizes: expected min and max (and factor, default 2), as -b / -e / -f");
  s.min_bytes = r.scalar(sz["min"], "grid.sizes.min");
  s.max_bytes = r.scalar(sz["max"], "grid.sizes.max");
  s.factor = sz["factor"] ? r.scalar(sz["factor"], "grid.sizes.factor") : "2";
  const auto size_check = [&](const std::string& v, const char* key) {
    try {
      (void)cli::parse_size(v, key);
    } catch (const InputError& e) {
      r.fail(sz, e.what());
    }
  };
  size_check(s.min_bytes, "grid.sizes.min");
  size_check(s.max_bytes, "grid.sizes.max");

  s.dtypes = g["dtypes"] ? r.list(g["dtypes"], "grid.dtypes") : std::vector<std::string>{"float"};
  for (const std::string& d : s.dtypes) {
    try {
      const std::size_t elem = algo::size_of(algo::parse_dtype(d));
      (void)cli::size_sweep(s.min_bytes, s.max_bytes, s.factor, elem);
    } catch (const InputError& e) {
      r.fail(g["dtypes"] ? g["dtypes"] : sz, fmt::format("grid.sizes / dtypes: {}", e.what()));
    }
  }
  s.channels = g["channels"] ? r.list(g["channels"], "grid.channels") : std::vector<std::string>{"2"};
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

  if (root["real"]) {
    if (!real) r.fail(root["real"], "real: only for engine real");
    const YAML::Node rn = root["real"];
    r.keys(rn, "real", kRealKeys);
    if (rn["backend"]) s.real.backend = r.scalar(rn["backend"], "real.backend");
    if (rn["mpirun"]) s.real.mpirun = r.list(rn["mpirun"], "real.mpirun");
    if (rn["iters"]) s.real.iters = r.integer(rn["iters"], "real.iters", 1, 100000);
    if (rn["warmup"]) s.real.warmup = r.integer(rn["warmup"], "real.warmup", 0, 100000);
    if (rn["check"]) s.real.check = r.integer(rn["check"], "real.check", 0, 1);
    if (rn["timeout"]) s.real.timeout_s = r.number(rn["timeout"], "real.timeout", 1.0);
    if (rn["bench"]) s.real.bench = resolve(s.dir, r.scalar(rn["bench"], "real.bench"));
  }
  return s;
}

namespace {

// --- provenance -----------------------------------------------------------------------------

std::string run_capture(const std::vector<std::string>& argv) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return "";
  const pid_t pid = fork();
  if (pid < 0) return "";
  if (pid == 0) {
    dup2(pipefd[1], 1);
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string git_commit(const std::string& dir) {
  const std::string d = run_capture({"git", "-C", dir, "describe", "--always", "--dirty"});
  return d.empty() ? "unknown" : d;
}

// --- progress on stderr ---------------------------------------------------------------------

class Progress {
 public:
  Progress(std::size_t total, std::size_t done, bool quiet)
      : total_(total),
        done_(done),
        start_done_(done),
        quiet_(quiet),
        tty_(isatty(2) == 1),
        start_(std::chrono::steady_clock::now()) {
    last_line_ = start_;
  }
  // The first progress line; the clock starts here.
  void start() {
    start_ = last_line_ = std::chrono::steady_clock::now();
    if (!quiet_ && !tty_) line();
  }
  void add(std::size_t n) {
    done_ += n;
    if (quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    if (tty_) {
      bar();
    } else if (done_ == total_ || now - last_line_ >= std::chrono::seconds(10) || decile() != last_decile_) {
      line();
      last_line_ = now;
    }
  }
  void finish() {
    if (!quiet_ && tty_) std::fputc('\n', stderr);
  }
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  int decile() const { return total_ ? static_cast<int>(10 * done_ / total_) : 10; }
  std::string stats() const {
    const double t = elapsed();
    const double rate = t > 0 ? static_cast<double>(done_ - start_done_) / t : 0.0;
    std::string left = "--:--";
    if (rate > 0) {
      const long s = std::lround(static_cast<double>(total_ - done_) / rate);
      left = fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
    }
    return fmt::format("{}/{} points ({:.0f}%), {:.1f} points/s, {:.0f} s elapsed, time left {}", done_, total_,
                       total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0, rate, t,
                       left);
  }
  void bar() {
    constexpr int kWidth = 30;
    const int filled = total_ ? static_cast<int>(kWidth * done_ / total_) : kWidth;
    std::fprintf(stderr, "\r[%s%s] %s ", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(), stats().c_str());
    std::fflush(stderr);
  }
  void line() {
    last_decile_ = decile();
    std::fprintf(stderr, "exp: %s\n", stats().c_str());
    std::fflush(stderr);
  }

  std::size_t total_, done_, start_done_;
  bool quiet_, tty_;
  std::chrono::steady_clock::time_point start_, last_line_;
  int last_decile_ = -1;
};

// --- the records file -----------------------------------------------------------------------

struct Existing {
  std::set<std::string> points;
  std::size_t dropped_partial = 0;  // bytes of a partial last line removed
};

// Reads DIR/records.jsonl: the points already written. A last line without its newline (an
// interrupted write) is cut off; any other line that is not a record of this spec is an error.
Existing read_existing(const std::string& file, const ExpSpec& spec) {
  Existing ex;
  if (!fs::exists(file)) return ex;
  const std::string text = read_file(file);
  std::size_t complete = text.rfind('\n');
  complete = complete == std::string::npos ? 0 : complete + 1;
  if (complete < text.size()) {
    ex.dropped_partial = text.size() - complete;
    fs::resize_file(file, complete);
  }
  std::istringstream in(text.substr(0, complete));
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    records::Record rec;
    try {
      rec = records::record_from_json(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}:{}: not a record ({}): fix or remove the file, or run with --fresh", file,
                                   lineno, std::string(e.what()).substr(0, 120)));
    }
    if (!rec.point || !rec.spec_hash)
      throw InputError(
          fmt::format("{}:{}: a record without point / spec_hash (not written by topocoll exp run): remove the "
                      "file or run with --fresh",
                      file, lineno));
    if (*rec.spec_hash != "sha256:" + spec.sha256)
      throw InputError(
          fmt::format("{}:{}: written from another version of the spec ({}, the spec is now sha256:{}): "
                      "run with --fresh to start over",
                      file, lineno, *rec.spec_hash, spec.sha256.substr(0, 12)));
    ex.points.insert(*rec.point);
  }
  return ex;
}

class RecordWriter {
 public:
  explicit RecordWriter(std::string file) : file_(std::move(file)) {}
  void write(const records::Record& r) {
    if (!out_.is_open()) {  // opened at the first record: a run that fails its checks leaves no file
      out_.open(file_, std::ios::app);
      if (!out_) throw InputError(fmt::format("{}: cannot open the records file for writing", file_));
    }
    out_ << records::to_json(r).dump() << '\n';
    out_.flush();  // a line at a time: an interrupted run leaves at most one partial line
    if (!out_) throw InputError(fmt::format("{}: writing failed", file_));
  }

 private:
  std::string file_;
  std::ofstream out_;
};

// --- the grid -------------------------------------------------------------------------------

std::string fmt_opt(const std::optional<int>& v) {
  return v ? std::to_string(*v) : "-";
}
std::string fmt_opt(const std::optional<std::string>& v) {
  return v ? *v : "-";
}

// The resume key: the point's grid coordinates as written in the spec, and the repetition.
std::string sim_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                      const std::optional<std::string>& fabric, const std::string& dtype, const std::string& channels,
                      const std::string& algorithm, std::uint64_t bytes, int rep) {
  return fmt::format("{}|nodes={}|fabric={}|dtype={}|channels={}|{}|{}|rep={}", s.topologies[ti], fmt_opt(nodes),
                     fmt_opt(fabric), dtype, channels, algorithm, bytes, rep);
}
std::string model_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                        const std::optional<std::string>& fabric, const std::string& dtype, std::uint64_t bytes) {
  return fmt::format("{}|nodes={}|fabric={}|dtype={}|nccl-model|{}", s.topologies[ti], fmt_opt(nodes), fmt_opt(fabric),
                     dtype, bytes);
}
std::string real_point(const ExpSpec& s, int ranks, const std::string& dtype, const std::string& channels,
                       const std::string& algorithm, std::uint64_t bytes, bool in_place, int rep) {
  return fmt::format("local|ranks={}|backend={}|dtype={}|channels={}|{}|{}|{}|rep={}", ranks, s.real.backend, dtype,
                     channels, algorithm, bytes, in_place ? "in-place" : "out-of-place", rep);
}

std::vector<std::uint64_t> sizes_of(const ExpSpec& s, const std::string& dtype) {
  return cli::size_sweep(s.min_bytes, s.max_bytes, s.factor, algo::size_of(algo::parse_dtype(dtype)));
}

records::Record provenance(const ExpSpec& s, const std::string& commit) {
  records::Record r;
  r.version = TOPOCOLL_VERSION;
  r.machine = records::hostname();
  r.experiment = s.name;
  r.spec_hash = "sha256:" + s.sha256;
  r.commit = commit;
  return r;
}

// --- simulated engines ----------------------------------------------------------------------

void run_simulated(const ExpSpec& s, const std::string& commit, const Existing& ex, RecordWriter& w,
                   Progress& progress) {
  std::unique_ptr<sim::Engine> engine = sim::make_engine(s.engine);
  // As `topocoll sim`: the base calibration (hardware); each protocol derives its own.
  const sim::Calibration calib =
      s.calibration.empty() ? sim::base_calibration() : sim::load_calibration(s.calibration_path);
  const std::uint64_t slice = cli::parse_size(s.slice, "grid.slice");
  const algo::ReduceOp op = algo::parse_op(s.op);
  std::set<std::string> notes;

  for (std::size_t ti = 0; ti < s.topologies.size(); ++ti)
    for (const auto& nodes : s.nodes)
      for (const auto& fabric : s.fabrics) {
        // Points of this cluster still to run; a cluster with none is not even loaded.
        std::size_t todo = 0, group_total = 0;
        for (const std::string& dtype : s.dtypes)
          for (std::uint64_t bytes : sizes_of(s, dtype)) {
            for (const std::string& ch : s.channels)
              for (const std::string& a : s.algorithms)
                for (int rep = 0; rep < s.repetitions; ++rep) {
                  ++group_total;
                  todo += !ex.points.count(sim_point(s, ti, nodes, fabric, dtype, ch, a, bytes, rep));
                }
            if (s.nccl_model) {
              ++group_total;
              todo += !ex.points.count(model_point(s, ti, nodes, fabric, dtype, bytes));
            }
          }
        if (todo == 0) continue;

        TopoArgs ta;
        ta.topology = s.topology_paths[ti];
        ta.nodes = nodes;
        ta.fabric = fabric;
        ta.oversubscription = s.oversubscription;
        topo::TopologyOptions o = topology_options(ta);
        o.merge_nvswitch_planes = true;  // as `topocoll sim`: the hardware stripes NVLink traffic over the planes
        topo::Topology t = [&] {
          try {
            return topo::load_topology(o);
          } catch (const InputError& e) {
            throw InputError(
                fmt::format("{}: grid point {} x nodes {}: {}", s.path, s.topologies[ti], fmt_opt(nodes), e.what()));
          }
        }();
        const algo::Layout layout = algo::layout_of(t);
        const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t);
        const double factor = algo::busbw_factor(algo::Collective::AllReduce, t.num_ranks());
        // Protocols, exactly as `topocoll sim` picks them: the spec's `protocol`, else the
        // calibration file's, else "auto": every protocol NCCL would enable on this topology (LL
        // and Simple; LL128 by NCCL's rule), each schedule run under each, the fastest kept.
        const std::vector<sim::Protocol> protocols = sim::select_protocols(nccl, calib, s.protocol, "protocol");
        std::vector<sim::Calibration> calibs;
        for (sim::Protocol p : protocols) calibs.push_back(sim::protocol_calibration(calib, p));

        records::Record base = provenance(s, commit);
        base.kind = "simulated";
        base.engine = engine->name();
        base.topology = s.topologies[ti];
        base.nodes = t.nodes();
        base.fabric = t.fabric() ? std::string(topo::to_string(t.fabric()->kind)) : "";
        base.oversubscription = t.fabric() ? t.fabric()->oversubscription : 1.0;
        base.ranks = t.num_ranks();
        base.op = std::string(algo::to_string(op));
        base.slice_bytes = slice;
        base.calibration = s.calibration.empty() ? calib.source : s.calibration;

        for (const std::string& dtype_name : s.dtypes) {
          const algo::DataType dtype = algo::parse_dtype(dtype_name);
          const std::size_t elem = algo::size_of(dtype);
          const std::vector<std::uint64_t> sizes = sizes_of(s, dtype_name);
          for (const std::string& ch : s.channels) {
            algo::Tuning tuning;
            // "nccl": the channels stock NCCL runs with on this topology (the model's ring graph,
            // doubled by ncclTopoPostset, at most 32), as scripts/validate uses.
            tuning.channels = ch == "nccl"
                                  ? std::min(32, nccl.comm_channels > 0 ? nccl.comm_channels : 2 * nccl.channels)
                                  : std::stoi(ch);
            tuning.slice_bytes = slice;
            for (const std::string& a : s.algorithms) {
              const algo::Algorithm& alg = algo::find_algorithm(a);
              for (std::uint64_t bytes : sizes) {
                const algo::CollectiveArgs args =
                    algo::CollectiveArgs::allreduce(bytes / elem, dtype, op, t.num_ranks());
                const algo::Support sup = alg.supports(layout, args, tuning);
                std::optional<algo::Schedule> sched;
                sim::SimResult res;
                std::size_t won = 0;
                for (int rep = 0; rep < s.repetitions; ++rep) {
                  const std::string point = sim_point(s, ti, nodes, fabric, dtype_name, ch, a, bytes, rep);
                  if (ex.points.count(point)) continue;
                  if (!sup.ok) {
                    const std::string note = fmt::format("{} on {} x {} nodes: not supported ({}): no records", a,
                                                         s.topologies[ti], t.nodes(), sup.reason);
                    if (notes.insert(note).second) std::fprintf(stderr, "exp: note: %s\n", note.c_str());
                    progress.add(1);
                    continue;
                  }
                  // Simulated engines are deterministic: the repetitions of a point share one run.
                  if (!sched) {
                    sched = alg.generate(layout, args, tuning);
                    // Every protocol; the fastest wins (the first in LL, LL128, Simple order on a tie).
                    for (std::size_t i = 0; i < calibs.size(); ++i) {
                      sim::SimResult ri = engine->run(t, *sched, calibs[i], sim::SimOptions{});
                      if (i == 0 || ri.time_s < res.time_s) {
                        res = std::move(ri);
                        won = i;
                      }
                    }
                  }
                  records::Record rec = base;
                  rec.algorithm = a;
                  rec.dtype = std::string(algo::to_string(dtype));
                  rec.size_bytes = bytes;
                  rec.count = args.count;
                  rec.channels = sched->num_channels();
                  rec.time_us = res.time_s * 1e6;
                  rec.algbw_gbps = res.time_s > 0 ? static_cast<double>(bytes) / res.time_s / 1e9 : 0.0;
                  rec.busbw_gbps = rec.algbw_gbps * factor;
                  rec.protocol = std::string(sim::to_string(protocols[won]));
                  rec.repetition = rep;
                  rec.point = point;
                  rec.date = records::now_iso8601();
                  w.write(rec);
                  progress.add(1);
                }
              }
            }
          }
          // The stock-NCCL reference: what NCCL would pick per size and how long it predicts.
          if (s.nccl_model)
            for (std::uint64_t bytes : sizes) {
              const std::string point = model_point(s, ti, nodes, fabric, dtype_name, bytes);
              if (ex.points.count(point)) continue;
              const sim::NcclPrediction pick = sim::nccl_choice(nccl, bytes);
              records::Record rec = base;
              rec.kind = "model";
              rec.engine = "nccl-model";
              rec.algorithm = fmt::format("nccl:{}/{}", pick.algorithm, pick.protocol);
              rec.dtype = std::string(algo::to_string(dtype));
              rec.size_bytes = bytes;
              rec.count = bytes / elem;
              rec.channels = nccl.channels;
              rec.time_us = pick.time_us;
              rec.protocol = pick.protocol;
              rec.algbw_gbps = pick.time_us > 0 ? static_cast<double>(bytes) / (pick.time_us * 1e-6) / 1e9 : 0.0;
              rec.busbw_gbps = rec.algbw_gbps * factor;
              rec.repetition = 0;
              rec.point = point;
              rec.date = records::now_iso8601();
              w.write(rec);
              progress.add(1);
            }
        }
      }
}

// --- engine real: mpirun ... topocoll-bench -----------------------------------------------------

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// Runs argv with stdout and stderr into `log`; returns the exit status (-1: did not start).
int run_logged(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string error_line(const std::string& log) {
  std::ifstream f(log);
  std::string line, found, last;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    last = line;
    if (found.empty() && line.find("error:") != std::string::npos) found = line;
  }
  return found.empty() ? last : found;
}

void run_real(const ExpSpec& s, const std::string& commit, const Existing& ex, RecordWriter& w, Progress& progress,
              const std::string& out_dir, const std::function<void()>& header) {
  const std::string bench = !s.real.bench.empty()           ? s.real.bench
                            : std::getenv("TOPOCOLL_BENCH") ? std::string(std::getenv("TOPOCOLL_BENCH"))
                                                            : (fs::path(self_dir()) / "topocoll-bench").string();
  if (!fs::exists(bench))
    throw InputError(
        fmt::format("{}: engine real needs topocoll-bench (built with MPI): {} does not exist (set real.bench or "
                    "TOPOCOLL_BENCH)",
                    s.path, bench));
  const std::string tmp = (fs::path(out_dir) / ".exp-real.jsonl").string();
  const std::string log = (fs::path(out_dir) / ".exp-real.log").string();
  const auto bench_argv = [&](int ranks, const std::string& dtype, const std::string& ch, const std::string& min_bytes,
                              const std::string& max_bytes, int iters, int warmup, int check,
                              const std::string& output) {
    std::vector<std::string> argv = s.real.mpirun;
    for (const std::string& x : {std::string("-np"),
                                 std::to_string(ranks),
                                 bench,
                                 std::string("--backend"),
                                 s.real.backend,
                                 std::string("--algorithm"),
                                 fmt::format("{}", fmt::join(s.algorithms, ",")),
                                 std::string("-b"),
                                 min_bytes,
                                 std::string("-e"),
                                 max_bytes,
                                 std::string("-f"),
                                 s.factor,
                                 std::string("-d"),
                                 dtype,
                                 std::string("-o"),
                                 s.op,
                                 std::string("--channels"),
                                 ch,
                                 std::string("--slice"),
                                 s.slice,
                                 std::string("-n"),
                                 std::to_string(iters),
                                 std::string("-w"),
                                 std::to_string(warmup),
                                 std::string("-c"),
                                 std::to_string(check),
                                 std::string("--timeout"),
                                 fmt::format("{:g}", s.real.timeout_s),
                                 std::string("--format"),
                                 std::string("jsonl"),
                                 std::string("-O"),
                                 output})
      argv.push_back(x);
    return argv;
  };
  const auto todo_of = [&](int ranks, const std::string& dtype, const std::string& ch, int rep) {
    std::size_t todo = 0;
    for (const std::string& a : s.algorithms)
      for (std::uint64_t b : sizes_of(s, dtype))
        for (bool ip : {false, true}) todo += !ex.points.count(real_point(s, ranks, dtype, ch, a, b, ip, rep));
    return todo;
  };
  // Before the first point: topocoll-bench itself checks what it accepts (backend, algorithms on
  // this many ranks, dtype), with one iteration of the smallest size per (ranks, dtype, channels)
  // that has points left to run.
  for (int ranks : s.ranks)
    for (const std::string& dtype : s.dtypes)
      for (const std::string& ch : s.channels) {
        std::size_t left = 0;
        for (int rep = 0; rep < s.repetitions; ++rep) left += todo_of(ranks, dtype, ch, rep);
        if (left == 0) continue;
        const int rc = run_logged(bench_argv(ranks, dtype, ch, s.min_bytes, s.min_bytes, 1, 1, 0, "/dev/null"), log);
        if (rc == 2)
          throw InputError(
              fmt::format("{}: topocoll-bench rejected the grid (ranks {}, dtype {}, channels {}, backend {}): {}",
                          s.path, ranks, dtype, ch, s.real.backend, error_line(log)));
        if (rc != 0)
          throw std::runtime_error(
              fmt::format("{} -np {} topocoll-bench (a check run of one size) exited {}: {} (full log: {})",
                          s.real.mpirun.front(), ranks, rc, error_line(log), log));
      }
  header();
  progress.start();
  for (int ranks : s.ranks)
    for (const std::string& dtype : s.dtypes)
      for (const std::string& ch : s.channels)
        for (int rep = 0; rep < s.repetitions; ++rep) {
          // One mpirun per (ranks, dtype, channels, repetition) covers every algorithm and size,
          // in and out of place; it is skipped when all of its points are written.
          const std::size_t todo = todo_of(ranks, dtype, ch, rep);
          if (todo == 0) continue;
          fs::remove(tmp);
          const int rc = run_logged(
              bench_argv(ranks, dtype, ch, s.min_bytes, s.max_bytes, s.real.iters, s.real.warmup, s.real.check, tmp),
              log);
          if (rc == 2)
            throw InputError(
                fmt::format("{}: topocoll-bench rejected the grid (ranks {}, dtype {}, channels {}, backend {}): {}",
                            s.path, ranks, dtype, ch, s.real.backend, error_line(log)));
          if (rc != 0 && rc != 1)
            throw std::runtime_error(fmt::format("mpirun -np {} topocoll-bench exited {}: {} (full log: {})", ranks, rc,
                                                 error_line(log), log));
          std::ifstream in(tmp);
          std::string line;
          std::size_t written = 0;
          while (std::getline(in, line)) {
            if (line.empty()) continue;
            records::Record rec = records::record_from_json(nlohmann::json::parse(line));
            const std::string point = real_point(s, ranks, dtype, ch, rec.algorithm, rec.size_bytes, rec.in_place, rep);
            if (ex.points.count(point)) continue;
            const records::Record p = provenance(s, commit);
            rec.topology = "local";
            rec.calibration = "";
            rec.experiment = p.experiment;
            rec.spec_hash = p.spec_hash;
            rec.commit = p.commit;
            rec.repetition = rep;
            rec.point = point;
            w.write(rec);
            ++written;
          }
          fs::remove(tmp);
          if (rc == 1)
            throw std::runtime_error(
                fmt::format("mpirun -np {} topocoll-bench: a result was wrong or the run failed: {} (log: {})", ranks,
                            error_line(log), log));
          progress.add(std::min(written, todo));
        }
  fs::remove(log);
}

std::size_t count_points(const ExpSpec& s) {
  std::size_t n = 0;
  for (const std::string& dtype : s.dtypes) {
    const std::size_t sizes = sizes_of(s, dtype).size();
    if (s.engine == "real") {
      n += s.ranks.size() * s.channels.size() * s.algorithms.size() * sizes * 2 *
           static_cast<std::size_t>(s.repetitions);
    } else {
      const std::size_t clusters = s.topologies.size() * s.nodes.size() * s.fabrics.size();
      n += clusters * sizes *
           (s.channels.size() * s.algorithms.size() * static_cast<std::size_t>(s.repetitions) + (s.nccl_model ? 1 : 0));
    }
  }
  return n;
}

}  // namespace

int exp_run(const ExpArgs& a, std::ostream& out) {
  const ExpSpec s = load_exp_spec(a.spec);
  const std::string dir = a.output_dir.empty() ? s.dir : a.output_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw InputError(fmt::format("-o {}: cannot create the output folder", dir));
  // experiment.yaml -> records.jsonl; another spec in the folder (NAME.yaml) -> records-NAME.jsonl.
  const std::string stem = fs::path(s.path).stem().string();
  const std::string file =
      (fs::path(dir) / (stem == "experiment" ? "records.jsonl" : "records-" + stem + ".jsonl")).string();
  if (a.fresh) fs::remove(file);
  const Existing ex = read_existing(file, s);
  if (ex.dropped_partial)
    std::fprintf(stderr, "exp: %s: discarded a partial last line (%zu bytes) from an interrupted run\n", file.c_str(),
                 ex.dropped_partial);
  const std::size_t total = count_points(s);
  const std::string commit = git_commit(s.dir);
  Progress progress(total, std::min(total, ex.points.size()), a.quiet);
  RecordWriter w(file);
  const auto header = [&] {
    if (!a.quiet)
      std::fprintf(stderr, "exp: %s (%s, spec sha256:%s): %zu points, %zu already in %s\n", s.name.c_str(),
                   s.engine.c_str(), s.sha256.substr(0, 12).c_str(), total, ex.points.size(), file.c_str());
  };
  if (s.engine == "real") {
    run_real(s, commit, ex, w, progress, dir, header);
  } else {
    header();
    progress.start();
    run_simulated(s, commit, ex, w, progress);
  }
  progress.finish();
  out << fmt::format("exp: {}: {} points in {:.1f} s -> {}\n", s.name, total, progress.elapsed(), file);
  return 0;
}

// --- compare ----------------------------------------------------------------------------------

namespace {

std::map<std::string, nlohmann::json> load_points(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("{}: cannot read the records file", file));
  std::map<std::string, nlohmann::json> m;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
      (void)records::record_from_json(j);
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}:{}: not a record: {}", file, lineno, std::string(e.what()).substr(0, 120)));
    }
    if (!j.contains("point"))
      throw InputError(fmt::format("{}:{}: no 'point' field (not written by topocoll exp run)", file, lineno));
    // "Reproduces exactly" ignores when, where and from which checkout a record was made.
    for (const char* k : {"date", "machine", "commit"}) j.erase(k);
    const std::string key = j["point"].get<std::string>();
    if (!m.emplace(key, j).second) throw InputError(fmt::format("{}:{}: point {} appears twice", file, lineno, key));
  }
  return m;
}

}  // namespace

int exp_compare(const ExpArgs& a, std::ostream& out) {
  if (a.compare.size() != 2) throw InputError("exp compare: expected two records files");
  const auto x = load_points(a.compare[0]), y = load_points(a.compare[1]);
  std::size_t only_x = 0, only_y = 0, differ = 0, shown = 0;
  for (const auto& [k, j] : x) {
    auto it = y.find(k);
    if (it == y.end()) {
      ++only_x;
      if (shown++ < 10) out << fmt::format("only in {}: {}\n", a.compare[0], k);
    } else if (it->second != j) {
      ++differ;
      if (shown++ < 10) out << fmt::format("differs: {}\n  {}\n  {}\n", k, j.dump(), it->second.dump());
    }
  }
  for (const auto& [k, j] : y)
    if (!x.count(k)) {
      ++only_y;
      if (shown++ < 10) out << fmt::format("only in {}: {}\n", a.compare[1], k);
    }
  const bool same = only_x == 0 && only_y == 0 && differ == 0;
  out << fmt::format(
      "exp compare: {} and {} points; {} differ, {} only in the first, {} only in the second (date, machine, commit "
      "ignored): {}\n",
      x.size(), y.size(), differ, only_x, only_y, same ? "same" : "DIFFERENT");
  return same ? 0 : 1;
}

}  // namespace topocoll::tools
