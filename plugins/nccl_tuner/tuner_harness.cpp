// tuner_harness: loads an NCCL tuner plugin and calls it exactly as NCCL 2.28.9 does, for one
// ABI version, without NCCL or a GPU (docs/tuner.md, "Testing").
//
//   tuner_harness PLUGIN.so --abi 2|3|4|5 --nodes N --ranks R [--unavailable LIST]
//                 [--available LIST] [--expect-table FILE] [QUERY ...]
//
// QUERY is COLLECTIVE:BYTES (allreduce:1048576). Each prints one line:
//   allreduce 1048576 RING/SIMPLE 16     the tuner chose RING/SIMPLE, at most 16 channels (0: NCCL's count)
//   allreduce 1048576 nccl               the tuner left NCCL's choice (cost table untouched)
// The cost table of each call is filled as NCCL fills it: a positive predicted time per
// available algorithm/protocol, NCCL_ALGO_PROTO_IGNORE (-1) for the others. Available: TREE and
// RING with every protocol, NVLS and NVLS_TREE with SIMPLE; CollNet and PAT are not (no
// NCCL_COLLNET_ENABLE; PAT serves allgather / reducescatter only), nor what --unavailable names
// (ALGO or ALGO/PROTO, comma separated); --available makes some of them available (after the
// defaults, in the order given). v2 gets collNetSupport / nvlsSupport from that table.
// --expect-table: also query each row of FILE that matches the job at its first, middle and last
// byte, and require the row's choice (or NCCL's, where the row's is unavailable).
// The plugin's log lines go to stderr as "log WARN|INFO|TRACE: text".
// Exit status: 0 when every call kept to the ABI (and matched the table), 1 otherwise (an "ABI:"
// or "table:" line says why), 2 on bad usage.
#include <dlfcn.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "plugins/nccl_tuner/nccl_tuner_abi.h"
#include "plugins/nccl_tuner/tuner_table.hpp"

namespace {

namespace tt = topocoll::tuner;

using CostTable = float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];

struct Options {
  std::string plugin;
  int abi = 5;
  int nodes = 1, ranks = 1;
  bool unavailable[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {};
  std::string expect_table;
  std::vector<std::string> queries;
};

// What a call decided: an algorithm / protocol, or NCCL's (algorithm < 0), and nChannels.
struct Choice {
  int algorithm = NCCL_ALGO_UNDEF, protocol = NCCL_PROTO_UNDEF;
  int channels = 0;
};

int failures = 0;
void abi_error(const std::string& what) {
  std::printf("ABI: %s\n", what.c_str());
  ++failures;
}

void logger(ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/, int /*line*/, const char* fmt,
            ...) {
  const char* name = level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_INFO ? "INFO" : "TRACE";
  char text[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  std::fprintf(stderr, "log %s: %s\n", name, text);
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "tuner_harness: %s\n", why.c_str());
  std::exit(2);
}

std::optional<long long> parse_int(const char* s) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno != 0) return std::nullopt;
  return v;
}

// ALGO or ALGO/PROTO items of a comma list marked unavailable (or, `available`, available).
void mark(Options& o, const std::string& list, bool available, const std::string& flag) {
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    const std::size_t slash = item.find('/');
    const auto algo = tt::parse_algorithm(item.substr(0, slash));
    const auto proto = slash == std::string::npos ? std::nullopt : tt::parse_protocol(item.substr(slash + 1));
    if (!algo || (slash != std::string::npos && !proto))
      usage(flag + " '" + item + "': expected ALGO or ALGO/PROTO (RING/LL128, NVLS, ...)");
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p)
      if (!proto || static_cast<int>(*proto) == p) o.unavailable[static_cast<int>(*algo)][p] = !available;
    start = comma + 1;
  }
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int a = NCCL_ALGO_NVLS; a <= NCCL_ALGO_NVLS_TREE; ++a) o.unavailable[a][NCCL_PROTO_LL] = true;
  for (int a = NCCL_ALGO_NVLS; a <= NCCL_ALGO_NVLS_TREE; ++a) o.unavailable[a][NCCL_PROTO_LL128] = true;
  for (int a : {NCCL_ALGO_COLLNET_DIRECT, NCCL_ALGO_COLLNET_CHAIN, NCCL_ALGO_PAT})
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) o.unavailable[a][p] = true;
  if (argc < 2) usage("expected PLUGIN.so --abi 2|3|4|5 --nodes N --ranks R [--unavailable LIST] [QUERY ...]");
  o.plugin = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(arg + ": expected a value");
      return argv[++i];
    };
    auto count = [&](long long lo, long long hi) {
      const char* v = value();
      const auto n = parse_int(v);
      if (!n || *n < lo || *n > hi)
        usage(arg + " '" + v + "': expected " + std::to_string(lo) + " to " + std::to_string(hi));
      return static_cast<int>(*n);
    };
    if (arg == "--abi")
      o.abi = count(2, 5);
    else if (arg == "--nodes")
      o.nodes = count(1, 1 << 20);
    else if (arg == "--ranks")
      o.ranks = count(1, 1 << 24);
    else if (arg == "--unavailable")
      mark(o, value(), false, arg);
    else if (arg == "--available")
      mark(o, value(), true, arg);
    else if (arg == "--expect-table")
      o.expect_table = value();
    else if (!arg.empty() && arg[0] == '-')
      usage("unknown option " + arg);
    else
      o.queries.push_back(arg);
  }
  return o;
}

void fill_cost_table(const Options& o, CostTable& table) {
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p)
      table[a][p] = o.unavailable[a][p] ? static_cast<float>(NCCL_ALGO_PROTO_IGNORE) : 10.0f + 3.0f * a + p;
}

// The plugin, loaded as NCCL loads it, behind one interface whatever its ABI version.
class Tuner {
 public:
  explicit Tuner(const Options& o) : o_(o) {
    lib_ = dlopen(o.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) usage(std::string("cannot load the plugin: ") + dlerror());
    const std::string symbol = "ncclTunerPlugin_v" + std::to_string(o.abi);
    void* sym = dlsym(lib_, symbol.c_str());
    if (sym == nullptr) usage(o.plugin + " has no symbol " + symbol);
    switch (o.abi) {
      case 5:
        v5_ = static_cast<const ncclTuner_v5_t*>(sym);
        break;
      case 4:
        v4_ = static_cast<const ncclTuner_v4_t*>(sym);
        break;
      case 3:
        v3_ = static_cast<const ncclTuner_v3_t*>(sym);
        break;
      default:
        v2_ = static_cast<const ncclTuner_v2_t*>(sym);
        break;
    }
    const char* name = v5_ ? v5_->name : v4_ ? v4_->name : v3_ ? v3_->name : v2_->name;
    if (name == nullptr) abi_error(symbol + ": name is null");
    ncclResult_t r;
    const auto nodes = static_cast<std::size_t>(o.nodes), ranks = static_cast<std::size_t>(o.ranks);
    if (v5_) {
      ncclNvlDomainInfo_v5_t domains{o.nodes, o.ranks / o.nodes, o.ranks / o.nodes};
      ncclTunerConstants_v5_t constants{};
      r = v5_->init(&ctx_, 0x70c011, ranks, nodes, logger, &domains, &constants);
    } else if (v4_) {
      r = v4_->init(ranks, nodes, logger, &ctx_);
    } else if (v3_) {
      r = v3_->init(ranks, nodes, logger, &ctx_);
    } else {
      r = v2_->init(ranks, nodes, logger, &ctx_);
    }
    if (r != ncclSuccess) abi_error("init returned " + std::to_string(r));
  }
  ~Tuner() {
    const ncclResult_t r = v5_   ? v5_->finalize(ctx_)
                           : v4_ ? v4_->destroy(ctx_)
                           : v3_ ? v3_->destroy(ctx_)
                                 : v2_->destroy(ctx_);
    if (r != ncclSuccess) abi_error("finalize / destroy returned " + std::to_string(r));
    dlclose(lib_);
  }
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  Choice ask(tt::Collective c, std::size_t bytes) { return v2_ ? ask_v2(c, bytes) : ask_cost_table(c, bytes); }

 private:
  Choice ask_cost_table(tt::Collective c, std::size_t bytes) {
    CostTable table, before;
    fill_cost_table(o_, table);
    std::memcpy(before, table, sizeof table);
    int channels = 0;
    const auto func = static_cast<ncclFunc_t>(c);
    auto** cost = reinterpret_cast<float**>(table);
    ncclResult_t r;
    if (v5_)
      r = v5_->getCollInfo(ctx_, func, bytes, 1, cost, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0, &channels);
    else if (v4_)
      r = v4_->getCollInfo(ctx_, func, bytes, 1, cost, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0, &channels);
    else
      r = v3_->getCollInfo(ctx_, func, bytes, 1, cost, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, &channels);
    const std::string call = std::string(tt::to_string(c)) + " " + std::to_string(bytes);
    if (r != ncclSuccess) abi_error(call + ": getCollInfo returned " + std::to_string(r));
    Choice choice;
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
        if (table[a][p] == before[a][p]) continue;
        if (before[a][p] == static_cast<float>(NCCL_ALGO_PROTO_IGNORE))
          abi_error(call + ": an IGNORE entry was changed");
        else if (table[a][p] != 0.0f)
          abi_error(call + ": an entry was set to " + std::to_string(table[a][p]) + ", not 0");
        else if (choice.algorithm >= 0)
          abi_error(call + ": more than one entry was set to 0");
        else
          choice = Choice{a, p, 0};
      }
    if (channels < 0 || channels > tt::kMaxChannels) abi_error(call + ": nChannels " + std::to_string(channels));
    if (choice.algorithm < 0 && channels != 0) abi_error(call + ": nChannels set without a choice");
    choice.channels = channels;
    return choice;
  }

  // As NCCL's v2 adaptor (src/plugin/tuner/tuner_v2.cc): support flags from the cost table,
  // then the returned entry zeroed when available.
  Choice ask_v2(tt::Collective c, std::size_t bytes) {
    CostTable table;
    fill_cost_table(o_, table);
    constexpr float kIgnore = static_cast<float>(NCCL_ALGO_PROTO_IGNORE);
    const int nvls =
        table[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] != kIgnore || table[NCCL_ALGO_NVLS_TREE][NCCL_PROTO_SIMPLE] != kIgnore;
    const int collnet = table[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] != kIgnore;
    int algorithm = NCCL_ALGO_UNDEF, protocol = NCCL_PROTO_UNDEF, channels = 0;
    const std::string call = std::string(tt::to_string(c)) + " " + std::to_string(bytes);
    if (v2_->getCollInfo(ctx_, static_cast<ncclFunc_t>(c), bytes, collnet, nvls, 1, &algorithm, &protocol, &channels) !=
        ncclSuccess)
      abi_error(call + ": getCollInfo returned an error");
    if ((algorithm == NCCL_ALGO_UNDEF) != (protocol == NCCL_PROTO_UNDEF))
      abi_error(call + ": only one of algorithm and protocol was set");
    // A pair NCCL cannot run is dropped by NCCL, its nChannels kept: v2 sees the two support
    // flags only, not which pairs the cost table has.
    Choice choice;
    choice.channels = channels;
    if (algorithm >= 0 && algorithm < NCCL_NUM_ALGORITHMS && protocol >= 0 && protocol < NCCL_NUM_PROTOCOLS &&
        table[algorithm][protocol] != kIgnore) {
      choice.algorithm = algorithm;
      choice.protocol = protocol;
    } else if (algorithm == NCCL_ALGO_UNDEF && channels != 0) {
      abi_error(call + ": nChannels set without a choice");
    }
    return choice;
  }

  const Options& o_;
  void* lib_ = nullptr;
  void* ctx_ = nullptr;
  const ncclTuner_v5_t* v5_ = nullptr;
  const ncclTuner_v4_t* v4_ = nullptr;
  const ncclTuner_v3_t* v3_ = nullptr;
  const ncclTuner_v2_t* v2_ = nullptr;
};

std::string describe(tt::Collective c, std::size_t bytes, const Choice& ch) {
  std::string out = std::string(tt::to_string(c)) + " " + std::to_string(bytes) + " ";
  if (ch.algorithm < 0) return out + "nccl";
  return out + std::string(tt::to_string(static_cast<tt::Algorithm>(ch.algorithm))) + "/" +
         std::string(tt::to_string(static_cast<tt::Protocol>(ch.protocol))) + " " + std::to_string(ch.channels);
}

// Each row of the table for this job, at its first, middle and last byte: the row's choice, or
// NCCL's where the harness's cost table has the row's combination unavailable.
void check_table(Tuner& tuner, const Options& o) {
  const tt::ParseResult table = tt::read_table(o.expect_table);
  if (!table.ok()) usage(o.expect_table + " line " + std::to_string(table.error_line) + ": " + table.error);
  int rows = 0;
  for (const tt::Row& row : table.rows) {
    if ((row.nodes != tt::kAny && row.nodes != o.nodes) || (row.ranks != tt::kAny && row.ranks != o.ranks)) continue;
    ++rows;
    const int a = static_cast<int>(row.algorithm), p = static_cast<int>(row.protocol);
    const bool available = !o.unavailable[a][p];
    for (std::uint64_t bytes : {row.min_bytes, row.min_bytes + (row.max_bytes - row.min_bytes) / 2, row.max_bytes}) {
      // The first matching row wins: a byte an earlier row covers is that row's.
      if (tt::find_row(table.rows, row.collective, bytes, o.nodes, o.ranks) != &row) continue;
      const Choice got = tuner.ask(row.collective, bytes);
      Choice want;
      if (available) want = Choice{a, p, row.channels == tt::kAny ? 0 : row.channels};
      if (got.algorithm != want.algorithm || got.protocol != want.protocol ||
          (want.algorithm >= 0 && got.channels != want.channels)) {
        std::printf("table: %s, expected %s\n", describe(row.collective, bytes, got).c_str(),
                    describe(row.collective, bytes, want).c_str());
        ++failures;
      }
    }
  }
  std::printf("table: %d rows for %d nodes, %d ranks checked\n", rows, o.nodes, o.ranks);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  {
    Tuner tuner(o);
    for (const std::string& q : o.queries) {
      const std::size_t colon = q.find(':');
      const auto c = tt::parse_collective(q.substr(0, colon));
      const auto bytes = colon == std::string::npos ? std::nullopt : parse_int(q.c_str() + colon + 1);
      if (!c || !bytes || *bytes < 0) usage("query '" + q + "': expected COLLECTIVE:BYTES (allreduce:1048576)");
      const auto n = static_cast<std::size_t>(*bytes);
      std::printf("%s\n", describe(*c, n, tuner.ask(*c, n)).c_str());
    }
    if (!o.expect_table.empty()) check_table(tuner, o);
  }
  return failures == 0 ? 0 : 1;
}
