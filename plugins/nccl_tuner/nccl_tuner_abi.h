/* The NCCL tuner plugin ABI, versions 2 to 5, as NCCL 2.28.9 loads them (docs/tuner.md).
 *
 * Written from NCCL's documented plugin interface (src/include/plugin/nccl_tuner.h and
 * tuner/tuner_v2.h ... tuner_v5.h, src/plugin/tuner.cc): only the types, values and layouts a
 * tuner exchanges with NCCL, so that the plugin builds without NCCL's headers (and without CUDA).
 * Not to be included together with NCCL's own headers: the names are NCCL's.
 *
 * How NCCL 2.28.9 uses a tuner:
 *   - NCCL_TUNER_PLUGIN=<path | name> (name: libnccl-tuner-<name>.so on the library path);
 *     dlopen(RTLD_NOW | RTLD_LOCAL), then dlsym of "ncclTunerPlugin_v5", else _v4, _v3, _v2:
 *     the newest found is used.
 *   - init once per communicator; getCollInfo once per collective (or group of collectives)
 *     it schedules; finalize (v5) / destroy (v2-v4) when the communicator is destroyed.
 *   - collCostTable is NCCL's float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] (a contiguous
 *     array passed as float**): the predicted time of each algorithm/protocol, or
 *     NCCL_ALGO_PROTO_IGNORE (-1.0) where the combination is not available. NCCL then picks the
 *     smallest non-negative entry, so a tuner selects a combination by setting its cost to 0.
 *     An IGNORE entry must stay as it is (NCCL cannot run that combination).
 *   - *nChannels enters as 0; a tuner that leaves it 0 keeps NCCL's channel count, any other
 *     value becomes the call's maximum channel count.
 *   - v2 has no cost table: the tuner returns algorithm and protocol (NCCL_ALGO_UNDEF /
 *     NCCL_PROTO_UNDEF to leave NCCL's choice) and NCCL zeroes that entry of its table when the
 *     combination is available (collNetSupport / nvlsSupport say which are).
 *   - a getCollInfo that returns an error fails the collective: a tuner with nothing to say
 *     returns ncclSuccess and changes nothing. */
#ifndef TOPOCOLL_NCCL_TUNER_ABI_H_
#define TOPOCOLL_NCCL_TUNER_ABI_H_

#if defined(NCCL_H_) || defined(NCCL_TUNER_H_)
#error "nccl_tuner_abi.h restates NCCL's tuner ABI; include it instead of NCCL's headers, not with them"
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

/* The collectives a tuner is asked about (nccl_common.h; the first five are the ones
 * NCCL_NUM_FUNCTIONS counts and the only ones getCollInfo receives). */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
} ncclFunc_t;
#define NCCL_NUM_FUNCTIONS 5

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
#define NCCL_INIT 0x1
#define NCCL_TUNING 0x40 /* the subsystem NCCL_DEBUG_SUBSYS=TUNING shows */

/* NCCL's logger: printf-style, filtered by NCCL_DEBUG / NCCL_DEBUG_SUBSYS. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

#define NCCL_ALGO_UNDEF -1
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_NUM_ALGORITHMS 7

#define NCCL_PROTO_UNDEF -1
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
#define NCCL_NUM_PROTOCOLS 3

#define NCCL_ALGO_PROTO_IGNORE -1.0

/* v5, the newest NCCL 2.28.9 looks for: init gets the communicator id, the NVLink domains and NCCL's tuning constants
 * (which a tuner may change in place; this one leaves them), and destroy became finalize. */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3

typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

/* v4: regBuff (the user buffers can be registered) added to getCollInfo. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

/* v3: the cost table (in place of v2's algorithm / protocol outputs). */
typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

/* v2, the oldest NCCL 2.28.9 still loads: algorithm and protocol returned directly. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                              int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v2_t;

#ifdef __cplusplus
}
#endif

#endif /* TOPOCOLL_NCCL_TUNER_ABI_H_ */
