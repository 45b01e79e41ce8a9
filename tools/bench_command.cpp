#include "tools/bench_command.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "runtime/communicator.hpp"
#include "runtime/executor.hpp"
#include "runtime/faults.hpp"
#include "runtime/mpi_transport.hpp"
#if TOPOCOLL_HAVE_UCX
#include "runtime/ucx_transport.hpp"
#endif
#include <fstream>

#include "common/records.hpp"
#include "runtime/reducer.hpp"
#include "runtime/rounds.hpp"
#include "runtime/test_data.hpp"
#include "tools/bench_nccl.hpp"
#include "tools/bench_topology.hpp"

namespace topocoll::tools {

namespace {

// The bench does not link the simulator library or the `topocoll` tool library (SimGrid defines
// MPI_Init & co. for SMPI and would shadow the real MPI); the shared command-line pieces live
// in common/cli_io.hpp for that reason.
using cli::Output;
using cli::parse_size;

std::vector<std::uint64_t> size_sweep(const BenchArgs& a, std::size_t elem) {
  return cli::size_sweep(a.min_bytes, a.max_bytes, a.factor, elem);
}

std::string allreduce_names() {
  std::string names;
  for (const algo::Algorithm& a : algo::registry())
    if (a.collective == algo::Collective::AllReduce) names += a.name + ", ";
  return names + "mpi or all";
}

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

// nccl-tests' time column: fewer decimals for larger times.
std::string time_str(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

// The transport of --backend (validated before): MPI point-to-point or UCX.
std::unique_ptr<runtime::Transport> make_transport(const BenchArgs& a, MPI_Comm comm, std::string& note) {
#if TOPOCOLL_HAVE_UCX
  if (a.backend == "ucx") {
    runtime::UcxOptions options;
    options.bulk_bytes = parse_size(a.ucx_bulk, "--ucx-bulk");
    auto ucx = std::make_unique<runtime::UcxTransport>(comm, options);
    note = "UCX: " + ucx->memory_support() + "\n# UCX: " +
           (options.bulk_bytes
                ? fmt::format("messages >= {} B over an endpoint without peer-failure handling (CMA allowed)",
                              options.bulk_bytes)
                : std::string("every message over peer-failure endpoints (shared memory or tcp, no CMA)"));
    return ucx;
  }
#endif
  note = "MPI point-to-point transport (MPI_Isend / MPI_Irecv, zero copy on topocoll's side)";
  return std::make_unique<runtime::MpiTransport>(comm);
}

// Which point-to-point layer (PML) Open MPI uses, as far as the process can tell: mpirun passes
// --mca pml X to its ranks as OMPI_MCA_pml.
std::string mpi_pml() {
  if (const char* pml = std::getenv("OMPI_MCA_pml"); pml != nullptr && *pml != '\0')
    return fmt::format("{} (OMPI_MCA_pml)", pml);
  return "as configured by mpirun (OMPI_MCA_pml not set: the MPI library's default selection)";
}

struct Point {
  double time_us = 0;
  std::uint64_t wrong = 0;
};

}  // namespace

std::vector<BenchEntry> validate_bench_args(const BenchArgs& a) {
  const std::string backends =
      std::string(TOPOCOLL_HAVE_UCX ? "mpi, ucx" : "mpi") + (TOPOCOLL_HAVE_NCCL ? " or nccl" : "");
  if (a.backend == "nccl" && !TOPOCOLL_HAVE_NCCL)
    throw InputError(
        fmt::format("--backend nccl: this topocoll-bench was built without CUDA + NCCL: expected {}", backends));
  if (a.backend == "ucx" && !TOPOCOLL_HAVE_UCX)
    throw InputError(
        "--backend ucx: this topocoll-bench was built without UCX (pkg-config ucx not found): expected mpi");
  if (a.backend != "mpi" && a.backend != "ucx" && a.backend != "nccl")
    throw InputError(fmt::format("--backend {}: expected {}", a.backend, backends));
  if (a.format != "table" && a.format != "jsonl")
    throw InputError(fmt::format("--format {}: expected table or jsonl", a.format));
  if (a.iters < 1) throw InputError(fmt::format("-n {}: expected at least 1 iteration", a.iters));
  if (a.warmup < 0) throw InputError(fmt::format("-w {}: expected 0 or more warmup iterations", a.warmup));
  if (a.channels < 1 || a.channels > 64) throw InputError(fmt::format("--channels {}: expected 1 to 64", a.channels));
  if (!(a.timeout_s > 0)) throw InputError(fmt::format("--timeout {}: expected seconds > 0", a.timeout_s));
  if (parse_size(a.slice, "--slice") == 0) throw InputError("--slice 0: expected at least 1 byte");
  parse_size(a.ucx_bulk, "--ucx-bulk");
  if (a.rounds && a.backend != "mpi")
    throw InputError(fmt::format(
        "--rounds with --backend {}: expected --backend mpi (--backend nccl always runs schedules in rounds)",
        a.backend));
  const algo::DataType dtype = algo::parse_dtype(a.dtype);
  algo::parse_op(a.op);
  size_sweep(a, algo::size_of(dtype));

  std::vector<BenchEntry> out;
  std::size_t start = 0;
  while (start <= a.algorithm.size()) {
    std::size_t end = a.algorithm.find(',', start);
    if (end == std::string::npos) end = a.algorithm.size();
    const std::string name = a.algorithm.substr(start, end - start);
    start = end + 1;
    if (name.empty()) throw InputError(fmt::format("--algorithm '{}': empty name in the list", a.algorithm));
    if (name == "mpi" || is_nccl_baseline(name)) {  // stock baselines: nullptr, named by bench_command
      if (is_nccl_baseline(name) && a.backend != "nccl")
        throw InputError(fmt::format("--algorithm {}: an NCCL baseline; it runs with --backend nccl", name));
      out.push_back({nullptr, name});
      continue;
    }
    if (name == "all") {
      for (const algo::Algorithm* alg : algo::select_algorithms("all", algo::Collective::AllReduce))
        out.push_back({alg, alg->name});
      out.push_back({nullptr, "mpi"});
      continue;
    }
    const algo::Algorithm* found = nullptr;
    for (const algo::Algorithm& alg : algo::registry())
      if (alg.name == name && alg.collective == algo::Collective::AllReduce) found = &alg;
    if (!found)
      throw InputError(
          fmt::format("--algorithm: unknown allreduce algorithm '{}': expected {}", name, allreduce_names()));
    out.push_back({found, name});
  }
  return out;
}

int bench_command(const BenchArgs& a, std::ostream& out) {
  const std::vector<BenchEntry> algorithms = validate_bench_args(a);
  const algo::DataType dtype = algo::parse_dtype(a.dtype);
  const algo::ReduceOp op = algo::parse_op(a.op);
  const std::size_t elem = algo::size_of(dtype);
  const std::vector<std::uint64_t> sizes = size_sweep(a, elem);
  algo::Tuning tuning;
  tuning.channels = a.channels;
  tuning.slice_bytes = parse_size(a.slice, "--slice");
  runtime::ExecOptions exec;
  exec.progress_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(a.timeout_s * 1000.0));

  runtime::Communicator comm;
  // The process behind every rank, so that a stall can say which are gone; the communicator's own
  // barriers and reductions give up after the progress timeout too (runtime/faults.hpp).
  const runtime::PeerTable peers = runtime::PeerTable::gather(comm.comm());
  comm.set_timeout(exec.progress_timeout, &peers);
  comm.layout();  // ranks numbered node by node, the same number per node: InputError on every rank alike
  const JobLayout job =
      job_layout(BenchTopology{a.topology, a.nodes > 0 ? std::optional<int>(a.nodes) : std::nullopt, a.fabric},
                 JobShape{comm.size(), comm.nodes(), comm.ranks_per_node()});
  const algo::Layout& layout = job.layout;
  const int rank = comm.rank(), ranks = comm.size();
  // More ranks on this node than cores: a stalled rank hands its core back at once (its peer may
  // be the one waiting for it) instead of polling for exec.spin first.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const bool oversubscribed = static_cast<unsigned>(comm.local_size()) > cores;
  if (oversubscribed) exec.spin = std::chrono::microseconds(0);
  std::string transport_note;  // a header line about the transport, rank 0 prints it
  std::unique_ptr<runtime::Transport> transport_owner = make_transport(a, comm.comm(), transport_note);
  runtime::Transport& transport = *transport_owner;
  // --rounds: schedules cut into rounds, each one group of MPI_Isend / MPI_Irecv.
  std::unique_ptr<runtime::MpiRoundTransport> round_transport;
  if (a.rounds) round_transport = std::make_unique<runtime::MpiRoundTransport>(comm.comm(), exec.progress_timeout);
  // While a rank waits in MPI (barriers, reductions), its transport keeps answering the peers.
  comm.set_progress([&transport] { transport.progress(); });

  // Buffers for the largest size, touched once here (page faults stay out of the timings).
  const std::uint64_t max_count = sizes.back() / elem;
  std::vector<std::byte> input(max_count * elem), output(max_count * elem), scratch;
  std::vector<std::byte> expected(std::min<std::uint64_t>(max_count, 1u << 16) * elem);

  std::optional<Output> sink_owner;
  std::ostream* sink = nullptr;
  if (rank == 0) {
    sink_owner.emplace(a.output, out, "-O");
    sink = &sink_owner->stream();
  }
  const double factor = algo::busbw_factor(algo::Collective::AllReduce, ranks);

  records::Record base;
  base.kind = "measured";
  base.engine = a.backend;
  base.topology = job.name;
  base.nodes = comm.nodes();
  base.ranks = ranks;
  base.dtype = std::string(algo::to_string(dtype));
  base.op = std::string(algo::to_string(op));
  base.version = TOPOCOLL_VERSION;
  base.date = records::now_iso8601();
  base.machine = records::hostname();

  if (sink && a.format == "table") {
    *sink << fmt::format("# topocoll-bench: backend {}, {} ranks on {} node{} ({} per node), host {}\n", a.backend,
                         ranks, comm.nodes(), comm.nodes() == 1 ? "" : "s", layout.ranks_per_node(), base.machine);
    *sink << fmt::format("# topology: {}\n", job.description);
    *sink << fmt::format("# iters {} warmup {} check {}; time = median over iterations of the max over ranks\n",
                         a.iters, a.warmup, a.check);
    *sink << fmt::format("# busbw = algbw * 2(p-1)/p = algbw * {:.4f} (nccl-tests' allreduce factor)\n", factor);
    if (!transport_note.empty()) *sink << "# " << transport_note << "\n";
    *sink << fmt::format("# {} ranks on this node, {} cores: {}\n", comm.local_size(), cores,
                         oversubscribed
                             ? "oversubscribed, a stalled rank yields at once"
                             : fmt::format("a stalled rank polls {} us before it yields", exec.spin.count()));
    *sink << "# MPI (the mpi algorithm, and the bootstrap): PML " << mpi_pml() << "\n";
  }

  // --backend nccl: device buffers; the stock baselines, and topocoll's schedules cut into rounds
  // over NCCL send/recv (bench_nccl.hpp).
  const bool on_gpu = a.backend == "nccl";
  std::unique_ptr<NcclBaselines> nccl;
  if (on_gpu) {
    std::vector<std::string> names;
    for (const BenchEntry& e : algorithms) names.push_back(e.name);
    if (std::string why; !nccl_available(&why)) throw InputError("--backend nccl: no usable GPU: " + why);
    nccl = make_nccl_baselines(comm.comm(), comm.local_rank(), sizes.back(), names, exec.progress_timeout);
    if (sink && a.format == "table") *sink << "# " << nccl->describe() << "\n";
  }

  std::vector<double> times(static_cast<std::size_t>(a.iters));
  std::uint64_t total_wrong = 0;
  for (std::size_t ai = 0; ai < algorithms.size(); ++ai) {
    const algo::Algorithm* alg = algorithms[ai].alg;
    const std::string& name = algorithms[ai].name;
    const bool is_nccl = is_nccl_baseline(name);
    if (sink && a.format == "table") {
      *sink << fmt::format(
          "#\n# {}: {}\n", name,
          alg       ? fmt::format("{} (channels {}, slice {} B)", alg->description, a.channels, tuning.slice_bytes)
          : is_nccl ? fmt::format("ncclAllReduce on GPU buffers{}", name == "nccl"        ? ""
                                                                    : name == "nccl-ring" ? ", NCCL_ALGO=Ring"
                                                                                          : ", NCCL_ALGO=Tree")
                    : std::string("MPI_Allreduce of the MPI library, same buffers"));
      *sink << "#                                                              out-of-place                       "
               "in-place          \n"
               "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw  "
               " busbw #wrong\n"
               "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
               "(GB/s)       \n";
    }
    std::uint64_t block_wrong = 0;
    double bw_sum = 0;
    int bw_n = 0;
    for (std::uint64_t bytes : sizes) {
      const algo::CollectiveArgs args = algo::CollectiveArgs::allreduce(bytes / elem, dtype, op, ranks);
      std::optional<algo::Schedule> sched;
      std::optional<runtime::Plan> plan;                // bound once, run for every iteration
      std::optional<runtime::RoundExecutor> in_rounds;  // --rounds: the same, cut into rounds
      std::string unsupported;
      if (alg) {
        const algo::Support s = alg->supports(layout, args, tuning);
        if (!s.ok)
          unsupported = s.reason;
        else {
          sched.emplace(alg->generate(layout, args, tuning));
          if (on_gpu)
            nccl->bind_schedule(*sched, rank);
          else if (a.rounds)
            in_rounds.emplace(*sched, rank, std::move(runtime::plan_rounds(*sched)[static_cast<std::size_t>(rank)]));
          else
            plan.emplace(*sched, rank);
        }
      } else if (!is_nccl && !mpi_type(dtype)) {
        unsupported = fmt::format("MPI has no {} type", algo::to_string(dtype));
      }
      if (!unsupported.empty()) {
        if (sink && a.format == "table") *sink << fmt::format(" {:>12} not supported: {}\n", bytes, unsupported);
        continue;
      }
      if (sched && scratch.size() < sched->scratch_count() * elem) scratch.resize(sched->scratch_count() * elem);
      // Every rank must be about to run the same call: an InputError on every rank otherwise.
      runtime::check_same_call(comm.comm(), {args, name, alg ? a.channels : 0, alg ? tuning.slice_bytes : 0},
                               exec.progress_timeout, &peers, [&transport] { transport.progress(); });

      Point points[2];
      for (int ip = 0; ip < 2; ++ip) {
        const bool in_place = ip == 1;
        void* in = input.data();
        void* outp = in_place ? input.data() : output.data();
        auto run_once = [&] {
          if (sched) {
            try {
              if (on_gpu) {
                nccl->run_schedule_us(in_place);
              } else if (in_rounds) {
                round_transport->restart();
                in_rounds->run(runtime::Buffers{in, outp, scratch.data()}, *round_transport);
              } else {
                plan->run(runtime::Buffers{in, outp, scratch.data()}, transport, exec);
              }
            } catch (const std::exception& e) {
              // Not an input error of the command: only this rank may see it.
              const std::string gone = peers.describe_gone();
              throw std::runtime_error(fmt::format("rank {}: {} at {} B{}: {}{}", rank, name, bytes,
                                                   in_place ? " in place" : "", e.what(),
                                                   gone.empty() ? std::string() : "; " + gone));
            }
          } else if (is_nccl) {
            nccl->run_us(name, dtype, op, args.count, in_place);
          } else {
            MPI_Allreduce(in_place ? MPI_IN_PLACE : in, outp, static_cast<int>(args.count), *mpi_type(dtype),
                          mpi_op(op), comm.comm());
            if (op == algo::ReduceOp::Avg) runtime::finish_avg(dtype, outp, args.count, ranks);
          }
        };
        auto fresh = [&] {
          if (on_gpu && (is_nccl || sched)) return nccl->fill(dtype, op, args.count, in_place);
          runtime::fill_input(dtype, op, rank, ranks, 0, in, args.count);
          if (!in_place) std::memset(outp, 0xA5, args.count * elem);
        };
        fresh();
        for (int i = 0; i < a.warmup; ++i) run_once();
        for (int i = 0; i < a.iters; ++i) {
          if (in_place) fresh();  // keep the values bounded (no overflow to inf, no denormals)
          comm.barrier();
          const auto t0 = std::chrono::steady_clock::now();
          run_once();
          times[static_cast<std::size_t>(i)] =
              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        }
        comm.max_over_ranks(times);
        std::vector<double> sorted = times;
        std::sort(sorted.begin(), sorted.end());
        const std::size_t n = sorted.size();
        points[ip].time_us = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        if (a.check) {
          fresh();
          comm.barrier();
          run_once();
          const bool device_output = on_gpu && (is_nccl || sched);
          std::uint64_t wrong = device_output ? nccl->count_wrong(dtype, op, args.count, in_place) : 0;
          const std::uint64_t chunk = expected.size() / elem;
          for (std::uint64_t off = 0; !device_output && off < args.count; off += chunk) {
            const std::uint64_t c = std::min(chunk, args.count - off);
            runtime::fill_expected(dtype, op, ranks, off, expected.data(), c);
            wrong += runtime::count_wrong(dtype, static_cast<const std::byte*>(outp) + off * elem, expected.data(), c);
          }
          points[ip].wrong = comm.sum_over_ranks(wrong);
          block_wrong += points[ip].wrong;
        }
      }
      if (!sink) continue;
      std::string row = fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", bytes, args.count, base.dtype, base.op, -1);
      for (int ip = 0; ip < 2; ++ip) {
        const double algbw =
            points[ip].time_us > 0 ? static_cast<double>(bytes) / (points[ip].time_us * 1e-6) / 1e9 : 0.0;
        const double busbw = algbw * factor;
        bw_sum += busbw;
        ++bw_n;
        row += fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_str(points[ip].time_us), algbw, busbw,
                           a.check ? fmt::format("{}", points[ip].wrong) : std::string("N/A"));
        if (a.format == "jsonl") {
          records::Record rec = base;
          rec.algorithm = name;
          rec.size_bytes = bytes;
          rec.count = args.count;
          rec.channels = sched ? sched->num_channels() : 0;
          rec.slice_bytes = sched ? tuning.slice_bytes : 0;
          rec.in_place = ip == 1;
          rec.time_us = points[ip].time_us;
          rec.algbw_gbps = algbw;
          rec.busbw_gbps = busbw;
          if (a.check) rec.wrong = points[ip].wrong;
          *sink << to_json(rec).dump() << "\n";
        }
      }
      if (a.format == "table") *sink << row << "\n" << std::flush;
    }
    total_wrong += block_wrong;
    if (sink && a.format == "table") {
      *sink << fmt::format("# Out of bounds values : {} {}\n", block_wrong, block_wrong ? "FAILED" : "OK");
      *sink << fmt::format("# Avg bus bandwidth    : {:g} \n", bw_n ? bw_sum / bw_n : 0.0);
    }
  }
  if (sink && a.format == "table") *sink << "#\n";
  comm.barrier();
  if (sink_owner) sink_owner->close();
  return total_wrong ? 1 : 0;
}

}  // namespace topocoll::tools
