// libnccl-tuner-topocoll.so: NCCL's tuner plugin answering getCollInfo from the tuner table
// `topocoll tune` computes for the job (TOPOCOLL_TUNER_TABLE=path; docs/tuner.md).
//
// Exports ncclTunerPlugin_v5 ... _v2 (nccl_tuner_abi.h); NCCL takes the newest it knows. The
// plugin never fails NCCL: no table, a table it cannot read or a malformed one is one line
// through NCCL's logger, then every call returns ncclSuccess leaving NCCL's own choice. A row
// whose algorithm / protocol NCCL cannot run for the call (an IGNORE entry of the cost table)
// leaves NCCL's choice as well.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "plugins/nccl_tuner/nccl_tuner_abi.h"
#include "plugins/nccl_tuner/tuner_table.hpp"

namespace {

using topocoll::tuner::Algorithm;
using topocoll::tuner::Collective;
using topocoll::tuner::Row;

constexpr const char* kPluginName = "topocoll";
constexpr const char* kTableVariable = "TOPOCOLL_TUNER_TABLE";

// One communicator's tuner: the rows of the table that apply to its job.
struct Context {
  std::vector<Row> rows;
  int nodes = 0, ranks = 0;
  ncclDebugLogger_t log = nullptr;
};

// A line through NCCL's logger (shown with NCCL_DEBUG=WARN / INFO / TRACE, subsystem TUNING).
#define TUNER_LOG(log, level, fmt, ...)                                                          \
  do {                                                                                           \
    if (log) (log)(level, NCCL_TUNING, __FILE__, __LINE__, "TUNER/topocoll: " fmt, __VA_ARGS__); \
  } while (0)

// The rows of the table named by TOPOCOLL_TUNER_TABLE that match this job. Exactly one log line
// says what was loaded, or why nothing was.
std::vector<Row> load_rows(int nodes, int ranks, ncclDebugLogger_t log) {
  const char* path = std::getenv(kTableVariable);
  if (path == nullptr || *path == '\0') {
    TUNER_LOG(log, NCCL_LOG_INFO, "%s is not set: NCCL's own choices", kTableVariable);
    return {};
  }
  const topocoll::tuner::ParseResult table = topocoll::tuner::read_table(path);
  if (!table.ok()) {
    if (table.error_line > 0)
      TUNER_LOG(log, NCCL_LOG_WARN, "%s=%s line %d: %s; the table is not used, NCCL's own choices", kTableVariable,
                path, table.error_line, table.error.c_str());
    else
      TUNER_LOG(log, NCCL_LOG_WARN, "%s=%s: %s; the table is not used, NCCL's own choices", kTableVariable, path,
                table.error.c_str());
    return {};
  }
  std::vector<Row> rows;
  for (const Row& r : table.rows)
    if ((r.nodes == topocoll::tuner::kAny || r.nodes == nodes) &&
        (r.ranks == topocoll::tuner::kAny || r.ranks == ranks))
      rows.push_back(r);
  TUNER_LOG(log, NCCL_LOG_INFO, "%s=%s: %zu of %zu rows for this communicator (%d nodes, %d ranks)", kTableVariable,
            path, rows.size(), table.rows.size(), nodes, ranks);
  return rows;
}

// The context of a communicator; nullptr (every call then leaves NCCL's choice) only when
// memory runs out.
void* make_context(std::size_t n_ranks, std::size_t n_nodes, ncclDebugLogger_t log) {
  try {
    auto ctx = std::make_unique<Context>();
    ctx->nodes = static_cast<int>(n_nodes);
    ctx->ranks = static_cast<int>(n_ranks);
    ctx->log = log;
    ctx->rows = load_rows(ctx->nodes, ctx->ranks, log);
    return ctx.release();
  } catch (...) {
    TUNER_LOG(log, NCCL_LOG_WARN, "%s", "out of memory loading the table: NCCL's own choices");
    return nullptr;
  }
}

// The row for this call, or nullptr: the collective must be one the table knows.
const Row* row_for(const Context* ctx, ncclFunc_t coll, std::size_t bytes) {
  if (ctx == nullptr || static_cast<int>(coll) < 0 || static_cast<int>(coll) >= NCCL_NUM_FUNCTIONS) return nullptr;
  return topocoll::tuner::find_row(ctx->rows, static_cast<Collective>(coll), bytes, ctx->nodes, ctx->ranks);
}

void set_channels(const Row& row, int* n_channels) {
  if (row.channels != topocoll::tuner::kAny && n_channels != nullptr) *n_channels = row.channels;
}

// v3-v5: the row's entry of NCCL's cost table (float[numAlgo][numProto], passed as float**) set
// to 0, so that NCCL selects it, when NCCL can run it for this call.
ncclResult_t get_coll_info(void* context, ncclFunc_t coll, std::size_t bytes, int /*num_pipe_ops*/, float** cost_table,
                           int num_algo, int num_proto, int /*reg_buff*/, int* n_channels) {
  const auto* ctx = static_cast<const Context*>(context);
  const Row* row = row_for(ctx, coll, bytes);
  if (row == nullptr || cost_table == nullptr) return ncclSuccess;
  const int a = static_cast<int>(row->algorithm), p = static_cast<int>(row->protocol);
  float* entry = a < num_algo && p < num_proto ? reinterpret_cast<float*>(cost_table) + a * num_proto + p : nullptr;
  if (entry == nullptr || *entry < 0.0f) {
    TUNER_LOG(ctx->log, NCCL_LOG_TRACE, "%s %zu B: %s/%s not available here, NCCL's choice",
              topocoll::tuner::to_string(row->collective).data(), bytes,
              topocoll::tuner::to_string(row->algorithm).data(), topocoll::tuner::to_string(row->protocol).data());
    return ncclSuccess;
  }
  *entry = 0.0f;
  set_channels(*row, n_channels);
  TUNER_LOG(ctx->log, NCCL_LOG_TRACE, "%s %zu B: %s/%s, channels %d",
            topocoll::tuner::to_string(row->collective).data(), bytes,
            topocoll::tuner::to_string(row->algorithm).data(), topocoll::tuner::to_string(row->protocol).data(),
            row->channels);
  return ncclSuccess;
}

// v2: no cost table; NCCL says whether NVLS and CollNet are available and zeroes the entry of
// the algorithm / protocol returned. Unavailable: both left NCCL_*_UNDEF.
ncclResult_t get_coll_info_v2(void* context, ncclFunc_t coll, std::size_t bytes, int collnet_support, int nvls_support,
                              int /*num_pipe_ops*/, int* algorithm, int* protocol, int* n_channels) {
  const Row* row = row_for(static_cast<const Context*>(context), coll, bytes);
  if (row == nullptr || algorithm == nullptr || protocol == nullptr) return ncclSuccess;
  const Algorithm a = row->algorithm;
  if ((a == Algorithm::Nvls || a == Algorithm::NvlsTree) && !nvls_support) return ncclSuccess;
  if ((a == Algorithm::CollNetDirect || a == Algorithm::CollNetChain) && !collnet_support) return ncclSuccess;
  *algorithm = static_cast<int>(a);
  *protocol = static_cast<int>(row->protocol);
  set_channels(*row, n_channels);
  return ncclSuccess;
}

ncclResult_t init_v5(void** context, uint64_t /*comm_id*/, std::size_t n_ranks, std::size_t n_nodes,
                     ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* /*nvl_domains*/,
                     ncclTunerConstants_v5_t* /*constants: NCCL's model is left as it is*/) {
  if (context != nullptr) *context = make_context(n_ranks, n_nodes, log);
  return ncclSuccess;
}

ncclResult_t init_v2_v4(std::size_t n_ranks, std::size_t n_nodes, ncclDebugLogger_t log, void** context) {
  if (context != nullptr) *context = make_context(n_ranks, n_nodes, log);
  return ncclSuccess;
}

ncclResult_t finalize(void* context) {
  delete static_cast<Context*>(context);
  return ncclSuccess;
}

ncclResult_t get_coll_info_v3(void* context, ncclFunc_t coll, std::size_t bytes, int num_pipe_ops, float** cost_table,
                              int num_algo, int num_proto, int* n_channels) {
  return get_coll_info(context, coll, bytes, num_pipe_ops, cost_table, num_algo, num_proto, 0, n_channels);
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) extern const ncclTuner_v5_t ncclTunerPlugin_v5;
__attribute__((visibility("default"))) extern const ncclTuner_v4_t ncclTunerPlugin_v4;
__attribute__((visibility("default"))) extern const ncclTuner_v3_t ncclTunerPlugin_v3;
__attribute__((visibility("default"))) extern const ncclTuner_v2_t ncclTunerPlugin_v2;

const ncclTuner_v5_t ncclTunerPlugin_v5 = {kPluginName, init_v5, get_coll_info, finalize};
const ncclTuner_v4_t ncclTunerPlugin_v4 = {kPluginName, init_v2_v4, get_coll_info, finalize};
const ncclTuner_v3_t ncclTunerPlugin_v3 = {kPluginName, init_v2_v4, get_coll_info_v3, finalize};
const ncclTuner_v2_t ncclTunerPlugin_v2 = {kPluginName, init_v2_v4, get_coll_info_v2, finalize};
}
