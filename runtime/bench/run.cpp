#include "runtime/bench/run.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "runtime/bench/mpi_arithmetic.hpp"
#include "runtime/bench/nccl_baselines.hpp"
#include "runtime/bench/placement.hpp"
#include "runtime/communicator.hpp"
#include "runtime/executor.hpp"
#include "runtime/faults.hpp"
#include "runtime/mpi_transport.hpp"
#include "runtime/reducer.hpp"
#include "runtime/rounds.hpp"
#include "runtime/shm_transport.hpp"
#include "runtime/test_data.hpp"
#if TOPOCOLL_HAVE_UCX
#include "runtime/ucx_transport.hpp"
#endif

namespace topocoll::runtime {

std::string_view to_string(BenchBackend b) {
  switch (b) {
    case BenchBackend::Mpi:
      return "mpi";
    case BenchBackend::Ucx:
      return "ucx";
    case BenchBackend::Nccl:
      return "nccl";
    case BenchBackend::Shm:
      return "shm";
  }
  return "?";
}

std::string_view to_string(ShmCopy c) {
  switch (c) {
    case ShmCopy::Push:
      return "push";
    case ShmCopy::Fused:
      return "fused";
    case ShmCopy::Map:
      return "map";
    case ShmCopy::Cma:
      return "cma";
  }
  return "?";
}

bool bench_backend_built(BenchBackend b) {
  switch (b) {
    case BenchBackend::Mpi:
      return true;
    case BenchBackend::Ucx:
      return TOPOCOLL_HAVE_UCX;
    case BenchBackend::Nccl:
      return TOPOCOLL_HAVE_NCCL;
    case BenchBackend::Shm:
      return true;
  }
  return false;
}

namespace {

// MPI's type and op for the baseline; nullopt when MPI has no such type.
std::optional<MPI_Datatype> mpi_type(algo::DataType t) {
  switch (t) {
    case algo::DataType::Int8:
      return MPI_INT8_T;
    case algo::DataType::Uint8:
      return MPI_UINT8_T;
    case algo::DataType::Int32:
      return MPI_INT32_T;
    case algo::DataType::Uint32:
      return MPI_UINT32_T;
    case algo::DataType::Int64:
      return MPI_INT64_T;
    case algo::DataType::Uint64:
      return MPI_UINT64_T;
    case algo::DataType::Float32:
      return MPI_FLOAT;
    case algo::DataType::Float64:
      return MPI_DOUBLE;
    default:
      return std::nullopt;
  }
}

MPI_Op mpi_op(algo::ReduceOp op) {
  switch (op) {
    case algo::ReduceOp::Sum:
    case algo::ReduceOp::Avg:
      return MPI_SUM;  // avg: finish_avg afterwards
    case algo::ReduceOp::Prod:
      return MPI_PROD;
    case algo::ReduceOp::Min:
      return MPI_MIN;
    case algo::ReduceOp::Max:
      return MPI_MAX;
  }
  return MPI_SUM;
}

// The transport of the backend (mpi, ucx or shm): MPI point-to-point, UCX, or the direct
// intra-node path with MPI point-to-point to other nodes; `note` says which.
std::unique_ptr<Transport> make_transport(const BenchOptions& o, MPI_Comm comm, int nodes, const PeerTable& peers,
                                          std::string& note) {
  if (o.backend == BenchBackend::Shm) {
    auto shm = std::make_unique<ShmTransport>(comm, nodes > 1 ? std::make_unique<MpiTransport>(comm) : nullptr,
                                              o.progress_timeout, &peers);
    shm->set_fused(o.shm_copy == ShmCopy::Fused || o.shm_copy == ShmCopy::Push);
    shm->set_push(o.shm_copy == ShmCopy::Push);
    note = shm->describe() + (nodes > 1 ? " (MPI point-to-point)" : "") + "\n# shm: --shm-copy " +
           std::string(to_string(o.shm_copy)) + ": " +
           (o.shm_copy == ShmCopy::Cma ? "the bench's buffers are private; receivers read them with process_vm_readv"
            : o.shm_copy == ShmCopy::Map
                ? "the bench's buffers lie in shared regions; receivers memcpy from the mapping, receive-reduces "
                  "through staging"
            : o.shm_copy == ShmCopy::Fused
                ? "the bench's buffers lie in shared regions; receivers memcpy from the mapping, receive-reduces "
                  "reduce from it in one pass"
                : "the bench's buffers lie in shared regions; receivers memcpy from the mapping, receive-reduces "
                  "reduce from it in one pass and write a result that is sent next straight into the receiver's "
                  "buffer (push) when its receive's destination is free");
    return shm;
  }
#if TOPOCOLL_HAVE_UCX
  if (o.backend == BenchBackend::Ucx) {
    UcxOptions options;
    options.bulk_bytes = o.ucx_bulk_bytes;
    auto ucx = std::make_unique<UcxTransport>(comm, options);
    note = "UCX: " + ucx->memory_support() + "\n# UCX: " +
           (options.bulk_bytes
                ? fmt::format("messages >= {} B over an endpoint without peer-failure handling (CMA allowed)",
                              options.bulk_bytes)
                : std::string("every message over peer-failure endpoints (shared memory or tcp, no CMA)"));
    return ucx;
  }
#endif
  note = "MPI point-to-point transport (MPI_Isend / MPI_Irecv, zero copy on topocoll's side)";
  return std::make_unique<MpiTransport>(comm);
}

// Which point-to-point layer (PML) Open MPI uses, as far as the process can tell: mpirun passes
// --mca pml X to its ranks as OMPI_MCA_pml.
std::string mpi_pml() {
  if (const char* pml = std::getenv("OMPI_MCA_pml"); pml != nullptr && *pml != '\0')
    return fmt::format("{} (OMPI_MCA_pml)", pml);
  return "as configured by mpirun (OMPI_MCA_pml not set: the MPI library's default selection)";
}

// What every rank must have resolved alike: the topology's name and description, and the layout
// (node of every rank, intra-node ring orders, rails).
std::vector<std::pair<std::string, std::string>> layout_fields(const JobLayout& job) {
  const algo::Layout& l = job.layout;
  auto ints = [](const std::vector<int>& v) {
    std::string out;
    for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
    return out;
  };
  std::string rings;
  for (const std::vector<int>& node : l.node_ranks) rings += (rings.empty() ? "" : " | ") + ints(node);
  return {{"--topology", job.name},
          {"its description", job.description},
          {"its layout", fmt::format("{} ranks on {} nodes, {} rails", l.ranks, l.nodes, l.rails)},
          {"its node of every rank", ints(l.node_of)},
          {"its intra-node ring orders", rings},
          {"its rail of every rank", ints(l.rail_of)}};
}

struct Point {
  double time_us = 0;
  double quartiles_us[2] = {0, 0};  // of the per-iteration maximum over ranks
  std::uint64_t wrong = 0;
};

// The q-quantile (0 <= q <= 1) of sorted values, linearly interpolated.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(at);
  if (below + 1 >= sorted.size()) return sorted.back();
  return sorted[below] + (at - static_cast<double>(below)) * (sorted[below + 1] - sorted[below]);
}

// The MPI library's name and version, its first line's words before the first comma
// (MPI_Get_library_version: "Open MPI v4.1.4, package: ...").
std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(std::max(0, len)));
  s = s.substr(0, s.find_first_of(",\n"));
  return s.empty() ? std::string("the MPI library") : s;
}

// The MPI_Ialltoallv arguments of an all-to-allv, in bytes: they must outlive the request, which
// the bench waits for before it starts another.
struct AlltoallvBytes {
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
};
AlltoallvBytes& alltoallv_bytes() {
  static AlltoallvBytes b;
  return b;
}

// Why the mpi baseline cannot run the call, empty when it can: the reductions need an MPI type of
// the dtype; the other collectives move bytes. MPI counts are ints.
std::string mpi_unsupported(const algo::CollectiveArgs& a) {
  if (algo::reduces(a.collective) && !mpi_type(a.dtype))
    return fmt::format("MPI has no {} type", algo::to_string(a.dtype));
  constexpr auto kMaxInt = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  if (a.collective == algo::Collective::AllToAllV) {  // counts and displacements in bytes, as ints
    const std::uint64_t most = std::max(a.input_count(), a.output_count()) * algo::size_of(a.dtype);
    if (most > kMaxInt) return fmt::format("{} bytes in a rank's buffer: more than MPI's int displacements", most);
    return {};
  }
  const std::uint64_t n = algo::reduces(a.collective) ? a.count : a.count * algo::size_of(a.dtype);
  if (n > kMaxInt) return fmt::format("{} elements per block: more than MPI's int count", n);
  return {};
}

// The MPI library's collective of `a` on the placed buffers, started non-blocking: the
// reductions in the dtype, the others as bytes. In place as NCCL lays it out (placement.hpp):
// MPI_Ireduce_scatter_block in place leaves the result at the start of the buffer, which
// finish_mpi_baseline moves to the rank's block.
int start_mpi_baseline(const algo::CollectiveArgs& a, const PlacedBuffers& b, bool in_place, int rank, MPI_Comm comm,
                       MPI_Request* req) {
  const int n = static_cast<int>(algo::reduces(a.collective) ? a.count : a.count * algo::size_of(a.dtype));
  const MPI_Datatype type = algo::reduces(a.collective) ? *mpi_type(a.dtype) : MPI_BYTE;
  const MPI_Op op = mpi_op(a.op);
  void* const send = in_place ? MPI_IN_PLACE : b.input;
  switch (a.collective) {
    case algo::Collective::AllReduce:
      return MPI_Iallreduce(send, b.output, n, type, op, comm, req);
    case algo::Collective::AllGather:
      return MPI_Iallgather(send, n, type, b.output, n, type, comm, req);
    case algo::Collective::ReduceScatter:  // in place: input and result in the whole buffer
      return MPI_Ireduce_scatter_block(send, in_place ? b.input : b.output, n, type, op, comm, req);
    case algo::Collective::Broadcast:
      if (rank == a.root && !in_place) std::memcpy(b.output, b.input, a.count * algo::size_of(a.dtype));
      return MPI_Ibcast(b.output, n, type, a.root, comm, req);
    case algo::Collective::Reduce:
      return MPI_Ireduce(in_place && rank == a.root ? MPI_IN_PLACE : b.input, b.output, n, type, op, a.root, comm, req);
    case algo::Collective::AllToAll:
      return MPI_Ialltoall(send, n, type, b.output, n, type, comm, req);
    case algo::Collective::AllToAllV: {
      const algo::AllToAllVSizes& m = *a.sizes;
      const std::size_t p = static_cast<std::size_t>(a.ranks), elem = algo::size_of(a.dtype);
      AlltoallvBytes& v = alltoallv_bytes();
      v.send_counts.resize(p);
      v.send_displs.resize(p);
      v.recv_counts.resize(p);
      v.recv_displs.resize(p);
      for (int j = 0; j < a.ranks; ++j) {  // within int: mpi_unsupported checked the buffers
        const auto k = static_cast<std::size_t>(j);
        v.send_counts[k] = static_cast<int>(m.count(rank, j) * elem);
        v.send_displs[k] = static_cast<int>(m.send_displ(rank, j) * elem);
        v.recv_counts[k] = static_cast<int>(m.count(j, rank) * elem);
        v.recv_displs[k] = static_cast<int>(m.recv_displ(rank, j) * elem);
      }
      // In place (a symmetric matrix only): MPI_IN_PLACE takes the data from the receive buffer.
      return MPI_Ialltoallv(send, v.send_counts.data(), v.send_displs.data(), MPI_BYTE, b.output, v.recv_counts.data(),
                            v.recv_displs.data(), MPI_BYTE, comm, req);
    }
  }
  return MPI_ERR_OTHER;
}

void finish_mpi_baseline(const algo::CollectiveArgs& a, const PlacedBuffers& b, bool in_place, int rank) {
  if (a.collective == algo::Collective::ReduceScatter && in_place && rank != 0)
    std::memmove(b.output, b.input, a.count * algo::size_of(a.dtype));
  finish_avg(a, rank, b.output, host_memory());
}

// Fresh inputs in the placed buffers (test_data's numbering of the collective); the output, where
// it is not the input, gets the 0xA5 pattern (in place allgather: the whole output, then the
// rank's input block inside it).
void fill_placed(const algo::CollectiveArgs& a, int rank, const PlacedBuffers& b, bool in_place) {
  const std::size_t elem = algo::size_of(a.dtype);
  if (!in_place || a.collective == algo::Collective::AllGather) std::memset(b.output, 0xA5, a.output_count() * elem);
  fill_collective_input(a, rank, 0, b.input, static_cast<std::size_t>(a.input_count()));
}

}  // namespace

std::string_view mpi_baseline_call(algo::Collective c) {
  switch (c) {
    case algo::Collective::AllReduce:
      return "MPI_Iallreduce";
    case algo::Collective::AllGather:
      return "MPI_Iallgather";
    case algo::Collective::ReduceScatter:
      return "MPI_Ireduce_scatter_block";
    case algo::Collective::Broadcast:
      return "MPI_Ibcast";
    case algo::Collective::Reduce:
      return "MPI_Ireduce";
    case algo::Collective::AllToAll:
      return "MPI_Ialltoall";
    case algo::Collective::AllToAllV:
      return "MPI_Ialltoallv";
  }
  return "?";
}

std::vector<std::pair<std::string, std::string>> agreement_fields(const BenchOptions& o) {
  std::string names, sizes;
  std::string files;
  for (const BenchEntry& e : o.entries) {
    names += (names.empty() ? "" : ",") + e.name;
    if (e.file) files += (files.empty() ? "" : ",") + e.file->path + ":" + e.file->digest;
  }
  for (std::uint64_t b : o.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(b);
  return {{"--backend", std::string(to_string(o.backend))},
          {"--collective", std::string(algo::to_string(o.collective))},
          {"--root", std::to_string(o.root)},
          {"--algorithm", names},
          {"the sizes in bytes (-b, -e, -f)", sizes},
          {"--datatype", std::string(algo::to_string(o.dtype))},
          {"--op", std::string(algo::to_string(o.op))},
          {"--iters", std::to_string(o.iters)},
          {"--warmup_iters", std::to_string(o.warmup)},
          {"--check", std::to_string(o.check)},
          {"-a (nccl-tests' average mode)", std::to_string(o.average)},
          {"--channels", std::to_string(o.channels)},
          {"--slice", std::to_string(o.slice_bytes)},
          {"--rounds", o.rounds ? "on" : "off"},
          {"--overlap", o.overlap ? "on" : "off"},
          {"--ucx-bulk", std::to_string(o.ucx_bulk_bytes)},
          {"--shm-copy", std::string(to_string(o.shm_copy))},
          {"--topology", o.topology.topology.empty() ? "(detected from MPI)" : o.topology.topology},
          {"--nodes", o.topology.nodes ? std::to_string(*o.topology.nodes) : "(the topology's own)"},
          {"--fabric", o.topology.fabric.empty() ? "(the topology's default)" : o.topology.fabric},
          {"--schedule (files and digests of their bytes)", files.empty() ? "(none)" : files},
          {"--sizes (the alltoallv size matrix)",
           o.alltoallv_sizes ? fmt::format("{}, hash {:016x}", o.alltoallv_sizes->describe(),
                                           std::hash<std::string>{}(algo::format_alltoallv_sizes(*o.alltoallv_sizes)))
                             : "(none)"}};
}

double bench_rank_time(int average, const std::vector<double>& per_rank) {
  if (per_rank.empty()) throw std::invalid_argument("bench_rank_time: no ranks");
  switch (average) {
    case 0:
      return per_rank.front();
    case 1:
      return std::accumulate(per_rank.begin(), per_rank.end(), 0.0) / static_cast<double>(per_rank.size());
    case 2:
      return *std::min_element(per_rank.begin(), per_rank.end());
    case 3:
      return *std::max_element(per_rank.begin(), per_rank.end());
  }
  throw std::invalid_argument(fmt::format("bench_rank_time: average {} is not 0..3", average));
}

std::uint64_t run_bench(const BenchOptions& o, BenchReport& report) {
  const std::vector<BenchEntry>& algorithms = o.entries;
  const algo::DataType dtype = o.dtype;
  const algo::ReduceOp op = o.op;
  const std::size_t elem = algo::size_of(dtype);
  const std::vector<std::uint64_t>& sizes = o.sizes;
  if (sizes.empty() || algorithms.empty()) throw InputError("run_bench: no sizes or no algorithms to run");
  algo::Tuning tuning;
  tuning.channels = o.channels;
  tuning.slice_bytes = o.slice_bytes;
  ExecOptions exec;
  exec.progress_timeout = o.progress_timeout;

  Communicator comm;
  // The process behind every rank, so that a stall can say which are gone; the communicator's own
  // barriers and reductions give up after the progress timeout too (runtime/faults.hpp).
  const PeerTable peers = PeerTable::gather(comm.comm(), exec.progress_timeout);
  comm.set_timeout(exec.progress_timeout, &peers);
  // The job's topology, agreed on by every rank before any data moves: a rank whose topology does
  // not load or fit the job, or that resolved another one, stops every rank with the same error.
  std::optional<JobLayout> job_found;
  Agreement job_agreement;
  try {
    comm.layout();  // ranks numbered node by node, the same number per node
    if (o.root < 0 || o.root >= comm.size())
      throw InputError(fmt::format("--root {}: expected a rank of the job, 0 to {}", o.root, comm.size() - 1));
    if (o.collective == algo::Collective::AllToAllV &&
        (!o.alltoallv_sizes || o.alltoallv_sizes->ranks() != comm.size()))
      throw InputError(fmt::format("--sizes: {}; the job has {} ranks",
                                   o.alltoallv_sizes
                                       ? fmt::format("a size matrix of {} ranks", o.alltoallv_sizes->ranks())
                                       : std::string("an alltoallv needs a size matrix"),
                                   comm.size()));
    job_found = job_layout(o.topology, JobShape{comm.size(), comm.nodes(), comm.ranks_per_node()});
    if (std::string why; o.backend == BenchBackend::Nccl && !nccl_available(&why))
      throw InputError("--backend nccl: no usable GPU: " + why);
    job_agreement.fields = layout_fields(*job_found);
  } catch (const InputError& e) {
    job_agreement.input_error = e.what();
  }
  agree(comm.comm(), job_agreement, "the job's topology", exec.progress_timeout, &peers);
  const JobLayout& job = *job_found;
  const algo::Layout& layout = job.layout;
  const int rank = comm.rank(), ranks = comm.size();
  // A schedule file for another job stops every rank before any data moves.
  for (const BenchEntry& e : algorithms)
    if (e.file && e.file->ranks != ranks)
      throw AgreedInputError(
          fmt::format("{}: written for {} ranks; the job has {}", e.file->path, e.file->ranks, ranks));
  const algo::Collective collective = o.collective;
  // More ranks on this node than cores: a stalled rank hands its core back at once (its peer may
  // be the one waiting for it) instead of polling for exec.spin first.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const bool oversubscribed = static_cast<unsigned>(comm.local_size()) > cores;
  if (oversubscribed) exec.spin = std::chrono::microseconds(0);
  std::string transport_note;  // a header line about the transport, rank 0 reports it
  std::unique_ptr<Transport> transport_owner = make_transport(o, comm.comm(), comm.nodes(), peers, transport_note);
  Transport& transport = *transport_owner;
  // rounds: schedules cut into rounds, each one group of MPI_Isend / MPI_Irecv.
  std::unique_ptr<MpiRoundTransport> round_transport;
  if (o.rounds) round_transport = std::make_unique<MpiRoundTransport>(comm.comm(), exec.progress_timeout);
  // While a rank waits in MPI (barriers, reductions), its transport keeps answering the peers.
  comm.set_progress([&transport] { transport.progress(); });

  // What MPI_SUM does where a sum leaves the dtype's range (mpi_arithmetic.hpp): #wrong of the
  // mpi baseline is counted against it, and its block says so.
  MpiSumArithmetic mpi_sum;
  std::string mpi_sum_line;
  const bool runs_mpi =
      std::any_of(algorithms.begin(), algorithms.end(), [](const BenchEntry& e) { return !e.alg && e.name == "mpi"; });
  if (runs_mpi && algo::reduces(collective) && op == algo::ReduceOp::Sum)
    if (const std::optional<MPI_Datatype> type = mpi_type(dtype)) {
      mpi_sum = probe_mpi_sum(dtype, *type);
      mpi_sum_line = describe_mpi_sum(mpi_sum, dtype, mpi_library());
    }

  // Buffers for the largest size (nccl_tests_bytes <= the size), touched once here (page faults
  // stay out of the timings). With the shm backend they lie in regions every rank of the node
  // maps, so that peers read them in place (ShmTransport::allocate, collective: scratch grows at
  // the same schedule on every rank, its scratch_count being every rank's).
  const std::uint64_t max_count = sizes.back() / elem;
  auto* shm = o.shm_copy == ShmCopy::Cma ? nullptr : dynamic_cast<ShmTransport*>(&transport);
  std::vector<std::byte> input_owner, output_owner, scratch_owner;
  std::byte *input = nullptr, *output = nullptr, *scratch = nullptr;
  std::size_t scratch_bytes = 0;
  if (shm) {
    input = shm->allocate(2 * max_count * elem);
    output = input + max_count * elem;
  } else {
    input_owner.resize(max_count * elem);
    output_owner.resize(max_count * elem);
    input = input_owner.data();
    output = output_owner.data();
  }

  const bool reporting = rank == 0;
  const double factor = algo::busbw_factor(collective, ranks);

  BenchStart start;
  records::Record& base = start.base;
  base.kind = "measured";
  base.engine = std::string(to_string(o.backend));
  base.collective = std::string(algo::to_string(collective));
  base.topology = job.name;
  base.nodes = comm.nodes();
  base.ranks = ranks;
  base.dtype = std::string(algo::to_string(dtype));
  base.op = std::string(algo::to_string(op));
  base.version = TOPOCOLL_VERSION;
  base.date = records::now_iso8601();
  base.machine = records::hostname();
  if (reporting) {
    start.ranks = ranks;
    start.nodes = comm.nodes();
    start.ranks_per_node = layout.ranks_per_node();
    start.topology = job.description;
    start.collective = collective;
    start.busbw_factor = factor;
    start.transport_note = transport_note;
    start.local_ranks = comm.local_size();
    start.cores = cores;
    start.oversubscribed = oversubscribed;
    start.spin_us = exec.spin.count();
    start.mpi_pml = mpi_pml();
    report.start(start);
  }

  // --backend nccl: device buffers; the stock baselines, and topocoll's schedules cut into rounds
  // over NCCL send/recv (nccl_baselines.hpp).
  const bool on_gpu = o.backend == BenchBackend::Nccl;
  std::unique_ptr<NcclBaselines> nccl;
  if (on_gpu) {
    std::vector<std::string> names;
    for (const BenchEntry& e : algorithms) names.push_back(e.name);
    nccl = make_nccl_baselines(comm.comm(), comm.local_rank(), sizes.back(), names, exec.progress_timeout);
    if (reporting) report.device(nccl->describe());
  }

  std::vector<double> times(static_cast<std::size_t>(o.iters));
  std::uint64_t total_wrong = 0;
  for (const BenchEntry& entry : algorithms) {
    const algo::Algorithm* alg = entry.alg;
    const std::string& name = entry.name;
    const bool is_nccl = is_nccl_baseline(name);
    if (reporting) report.block_start(entry);
    const bool is_mpi = !alg && !is_nccl;
    if (reporting && is_mpi && !mpi_sum_line.empty()) report.note(entry, mpi_sum_line);
    // push: how many of rank 0's sends to its node went straight into the receiver's buffer.
    const auto* pushing = o.shm_copy == ShmCopy::Push && alg ? dynamic_cast<const ShmTransport*>(&transport) : nullptr;
    const std::uint64_t sends_before = pushing ? pushing->sends() : 0, pushed_before = pushing ? pushing->pushed() : 0;
    std::uint64_t block_wrong = 0;
    double bw_sum = 0;
    int bw_n = 0;
    for (std::uint64_t bytes : sizes) {
      const algo::CollectiveArgs args =
          algo::collective_call(collective, bytes, o.alltoallv_sizes, dtype, op, ranks, o.root);
      const std::uint64_t call_bytes = algo::nccl_tests_bytes(args);
      std::optional<algo::Schedule> sched;
      std::optional<Plan> plan;                // bound once, run for every iteration
      std::optional<RoundExecutor> in_rounds;  // rounds: the same, cut into rounds
      std::string unsupported;
      if (alg) {
        const algo::Support s = alg->supports(layout, args, tuning);
        // A schedule file is asked for by name: what it cannot run is an error (the same on every
        // rank: the ranks agreed on the file's bytes), except the sizes a fixed-count file sits out.
        if (!s.ok && entry.file && !entry.file->sits_out(call_bytes, dtype)) throw AgreedInputError(s.reason);
        if (!s.ok)
          unsupported = entry.file ? entry.file->sits_out_line(call_bytes, dtype) : s.reason;
        else {
          try {
            sched.emplace(alg->generate(layout, args, tuning));
          } catch (const InputError& e) {  // a schedule file the verifier refuses: on every rank alike
            if (!entry.file) throw;
            throw AgreedInputError(e.what());
          }
          if (on_gpu)
            nccl->bind_schedule(*sched, rank);
          else if (o.rounds)
            in_rounds.emplace(*sched, rank, std::move(plan_rounds(*sched)[static_cast<std::size_t>(rank)]));
          else
            plan.emplace(*sched, rank);
        }
      } else if (!is_nccl) {
        unsupported = mpi_unsupported(args);
      }
      if (!unsupported.empty()) {
        if (reporting) report.unsupported(entry, call_bytes, unsupported);
        continue;
      }
      if (sched && scratch_bytes < sched->scratch_count() * elem) {
        scratch_bytes = sched->scratch_count() * elem;
        if (shm) {
          scratch = shm->allocate(scratch_bytes);
        } else {
          scratch_owner.resize(scratch_bytes);
          scratch = scratch_owner.data();
        }
      }
      // Every rank must be about to run the same call: an InputError on every rank otherwise.
      check_same_call(comm.comm(), {args, name, alg ? o.channels : 0, alg ? tuning.slice_bytes : 0},
                      exec.progress_timeout, &peers, [&transport] { transport.progress(); });

      Point points[2];
      // An all-to-allv with an asymmetric matrix has no in-place form (MPI_IN_PLACE needs every
      // rank to receive from each peer what it sends it): its in-place half is not run.
      const bool runs_in_place = !args.sizes || args.sizes->symmetric();
      for (int ip = 0; ip < (runs_in_place ? 2 : 1); ++ip) {
        const bool in_place = ip == 1;
        comm.set_context(fmt::format("{} at {} B{}", name, call_bytes, in_place ? " in place" : ""));
        const PlacedBuffers placed = place(bench_placement(args, rank, in_place), input, output, elem);
        void* in = placed.input;
        void* outp = placed.output;
        auto run_once = [&] {
          if (sched) {
            try {
              if (on_gpu) {
                nccl->run_schedule_us(in_place);
              } else if (in_rounds) {
                round_transport->restart();
                in_rounds->run(Buffers{in, outp, scratch}, *round_transport);
              } else {
                plan->run(Buffers{in, outp, scratch}, transport, exec);
              }
            } catch (const std::exception& e) {
              // Not an input error of the command: only this rank may see it.
              const std::string gone = peers.describe_gone();
              throw std::runtime_error(fmt::format("rank {}: {} at {} B{}: {}{}", rank, name, call_bytes,
                                                   in_place ? " in place" : "", e.what(),
                                                   gone.empty() ? std::string() : "; " + gone));
            }
          } else if (is_nccl) {
            nccl->run_us(name, args, in_place);
          } else {
            // Non-blocking and bounded by the progress timeout: a rank gone or stalled inside
            // the baseline ends the others with an error naming it, as in topocoll's schedules.
            MPI_Request req = MPI_REQUEST_NULL;
            const std::string_view call = mpi_baseline_call(collective);
            const int rc = start_mpi_baseline(args, placed, in_place, rank, comm.comm(), &req);
            const std::string what = fmt::format("rank {}: the mpi baseline ({}) at {} B{}", rank, call, call_bytes,
                                                 in_place ? " in place" : "");
            if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("{}: {} failed", what, call));
            wait_bounded(req, exec.progress_timeout, what, &peers);
            finish_mpi_baseline(args, placed, in_place, rank);
          }
        };
        auto fresh = [&] {
          if (on_gpu && (is_nccl || sched)) return nccl->fill(args, in_place);
          fill_placed(args, rank, placed, in_place);
        };
        // Inputs once, then the same calls back to back, in place as out of place: nothing but the
        // barrier between two timed calls (nccl-tests times its in-place loop on recvbuff ==
        // sendbuff and initialises the data only for the check). Re-filling the inputs before
        // every in-place call made in place 10-90x slower on a busy machine: the rank that
        // finished its fill first waited in the barrier, yielded its core, and the timed call
        // then waited a scheduler slice for it. In place the values grow from call to call (a sum
        // by a factor p); infinities cost the vector units nothing, and the check below starts
        // from fresh inputs.
        fresh();
        for (int i = 0; i < o.warmup; ++i) run_once();
        for (int i = 0; i < o.iters; ++i) {
          comm.barrier();
          const auto t0 = std::chrono::steady_clock::now();
          run_once();
          times[static_cast<std::size_t>(i)] =
              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        }
        // The per-iteration maximum over ranks: its median is the point's time (without -a), its
        // quartiles say how far the iterations spread.
        std::vector<double> slowest = times;
        comm.max_over_ranks(slowest);
        std::sort(slowest.begin(), slowest.end());
        points[ip].quartiles_us[0] = quantile(slowest, 0.25);
        points[ip].quartiles_us[1] = quantile(slowest, 0.75);
        if (o.average >= 0) {
          // nccl-tests' -a: each rank's mean, gathered through the max of a vector that holds
          // this rank's mean at its index and zeros elsewhere (times are >= 0).
          std::vector<double> per_rank(static_cast<std::size_t>(ranks), 0.0);
          per_rank[static_cast<std::size_t>(rank)] =
              std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
          comm.max_over_ranks(per_rank);
          points[ip].time_us = bench_rank_time(o.average, per_rank);
        } else {
          points[ip].time_us = quantile(slowest, 0.5);
        }
        if (o.check) {
          fresh();
          comm.barrier();
          run_once();
          const bool device_output = on_gpu && (is_nccl || sched);
          const std::uint64_t wrong = device_output ? nccl->count_wrong(args, in_place)
                                      : is_mpi      ? count_wrong_mpi_sum(args, rank, outp, mpi_sum)
                                                    : count_wrong_output(args, rank, outp);
          points[ip].wrong = comm.sum_over_ranks(wrong);
          block_wrong += points[ip].wrong;
        }
        // --overlap: the same call started, driven from a compute loop, completed (overlap.hpp).
        if (o.overlap && !in_place && !on_gpu && !in_rounds) {
          MPI_Request req = MPI_REQUEST_NULL;
          const std::string what = fmt::format("rank {}: {} at {} B (--overlap)", rank, name, call_bytes);
          OverlapHooks hooks;
          if (sched) {
            hooks.start = [&] { plan->start(Buffers{in, outp, scratch}, transport, exec); };
            hooks.test = [&] { return plan->test(); };
            hooks.wait = [&] { plan->wait(); };
          } else {
            hooks.start = [&] {
              if (start_mpi_baseline(args, placed, false, rank, comm.comm(), &req) != MPI_SUCCESS)
                throw std::runtime_error(fmt::format("{}: {} failed", what, mpi_baseline_call(collective)));
            };
            hooks.test = [&] {
              int flag = 0;
              MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
              if (flag) finish_mpi_baseline(args, placed, false, rank);
              return flag != 0;
            };
            hooks.wait = [&] {
              wait_bounded(req, exec.progress_timeout, what, &peers);
              finish_mpi_baseline(args, placed, false, rank);
            };
          }
          hooks.barrier = [&] { comm.barrier(); };
          hooks.max_over_ranks = [&](std::vector<double>& v) { comm.max_over_ranks(v); };
          const OverlapTimes ov = measure_overlap(hooks, points[0].time_us, o.iters);
          if (reporting) report.overlap(entry, call_bytes, ov);
        }
      }
      if (!reporting) continue;
      BenchRow row;
      row.bytes = call_bytes;
      row.count = args.count;
      row.root = algo::rooted(collective) ? o.root : -1;
      row.in_place_run = runs_in_place;
      for (int ip = 0; ip < 2; ++ip) {
        const double algbw =
            points[ip].time_us > 0 ? static_cast<double>(call_bytes) / (points[ip].time_us * 1e-6) / 1e9 : 0.0;
        const double busbw = algbw * factor;
        if (ip == 0 || runs_in_place) {  // a half not run is not in the average
          bw_sum += busbw;
          ++bw_n;
        }
        row.quartiles_us[ip][0] = points[ip].quartiles_us[0];
        row.quartiles_us[ip][1] = points[ip].quartiles_us[1];
        records::Record& rec = row.points[ip];
        rec = base;
        rec.algorithm = name;
        rec.size_bytes = call_bytes;
        rec.count = args.count;
        rec.channels = sched ? sched->num_channels() : 0;
        rec.slice_bytes = sched && !entry.file ? tuning.slice_bytes : 0;  // a file slices as it says
        rec.in_place = ip == 1;
        rec.time_us = points[ip].time_us;
        rec.algbw_gbps = algbw;
        rec.busbw_gbps = busbw;
        if (o.check) rec.wrong = points[ip].wrong;
      }
      report.row(entry, row);
    }
    total_wrong += block_wrong;
    if (reporting && pushing && pushing->sends() > sends_before)
      report.note(entry, fmt::format("shm push: {} of rank 0's {} sends on this node written straight into the "
                                     "receiver's buffer",
                                     pushing->pushed() - pushed_before, pushing->sends() - sends_before));
    if (reporting) report.block_end(entry, block_wrong, bw_n ? bw_sum / bw_n : 0.0);
  }
  if (reporting) report.finish();
  comm.set_context("the end of the run");
  comm.barrier();
  set_own_state(PeerState::Done);
  return total_wrong;
}

}  // namespace topocoll::runtime
