#include "tools/bench_command.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "runtime/communicator.hpp"
#include "runtime/executor.hpp"
#include "runtime/mpi_transport.hpp"
#include "runtime/reducer.hpp"
#include "runtime/test_data.hpp"
#include "simulator/records.hpp"
#include <fstream>

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
    case algo::DataType::Int8: return MPI_INT8_T;
    case algo::DataType::Uint8: return MPI_UINT8_T;
    case algo::DataType::Int32: return MPI_INT32_T;
    case algo::DataType::Uint32: return MPI_UINT32_T;
    case algo::DataType::Int64: return MPI_INT64_T;
    case algo::DataType::Uint64: return MPI_UINT64_T;
    case algo::DataType::Float32: return MPI_FLOAT;
    case algo::DataType::Float64: return MPI_DOUBLE;
    default: return std::nullopt;
  }
}

MPI_Op mpi_op(algo::ReduceOp op) {
  switch (op) {
    case algo::ReduceOp::Sum:
    case algo::ReduceOp::Avg: return MPI_SUM;  // avg: finish_avg afterwards
    case algo::ReduceOp::Prod: return MPI_PROD;
    case algo::ReduceOp::Min: return MPI_MIN;
    case algo::ReduceOp::Max: return MPI_MAX;
  }
  return MPI_SUM;
}

// nccl-tests' time column: fewer decimals for larger times.
std::string time_str(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

struct Point {
  double time_us = 0;
  std::uint64_t wrong = 0;
};

}  // namespace

std::vector<const algo::Algorithm*> validate_bench_args(const BenchArgs& a) {
  if (a.backend != "mpi") {
    if (a.backend == "ucx" || a.backend == "nccl")
      throw InputError(fmt::format("--backend {}: not built yet in this version: expected mpi", a.backend));
    throw InputError(fmt::format("--backend {}: expected mpi", a.backend));
  }
  if (a.format != "table" && a.format != "jsonl") throw InputError(fmt::format("--format {}: expected table or jsonl", a.format));
  if (a.iters < 1) throw InputError(fmt::format("-n {}: expected at least 1 iteration", a.iters));
  if (a.warmup < 0) throw InputError(fmt::format("-w {}: expected 0 or more warmup iterations", a.warmup));
  if (a.channels < 1 || a.channels > 64) throw InputError(fmt::format("--channels {}: expected 1 to 64", a.channels));
  if (!(a.timeout_s > 0)) throw InputError(fmt::format("--timeout {}: expected seconds > 0", a.timeout_s));
  if (parse_size(a.slice, "--slice") == 0) throw InputError("--slice 0: expected at least 1 byte");
  const algo::DataType dtype = algo::parse_dtype(a.dtype);
  algo::parse_op(a.op);
  size_sweep(a, algo::size_of(dtype));

  std::vector<const algo::Algorithm*> out;
  std::size_t start = 0;
  while (start <= a.algorithm.size()) {
    std::size_t end = a.algorithm.find(',', start);
    if (end == std::string::npos) end = a.algorithm.size();
    const std::string name = a.algorithm.substr(start, end - start);
    start = end + 1;
    if (name.empty()) throw InputError(fmt::format("--algorithm '{}': empty name in the list", a.algorithm));
    if (name == "mpi") {
      out.push_back(nullptr);
      continue;
    }
    if (name == "all") {
      for (const algo::Algorithm* alg : algo::select_algorithms("all", algo::Collective::AllReduce)) out.push_back(alg);
      out.push_back(nullptr);
      continue;
    }
    const algo::Algorithm* found = nullptr;
    for (const algo::Algorithm& alg : algo::registry())
      if (alg.name == name && alg.collective == algo::Collective::AllReduce) found = &alg;
    if (!found) throw InputError(fmt::format("--algorithm: unknown allreduce algorithm '{}': expected {}", name, allreduce_names()));
    out.push_back(found);
  }
  return out;
}

int bench_command(const BenchArgs& a, std::ostream& out) {
  const std::vector<const algo::Algorithm*> algorithms = validate_bench_args(a);
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
  const algo::Layout layout = comm.layout();  // InputError on every rank alike
  const int rank = comm.rank(), ranks = comm.size();
  runtime::MpiTransport transport(comm.comm());

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

  sim::Record base;
  base.kind = "measured";
  base.engine = a.backend;
  base.topology = "mpi";
  base.nodes = comm.nodes();
  base.ranks = ranks;
  base.dtype = std::string(algo::to_string(dtype));
  base.op = std::string(algo::to_string(op));
  base.version = TOPOCOLL_VERSION;
  base.date = sim::now_iso8601();
  base.machine = sim::hostname();

  if (sink && a.format == "table") {
    *sink << fmt::format("# topocoll-bench: backend {}, {} ranks on {} node{} ({} per node), host {}\n", a.backend, ranks, comm.nodes(),
                         comm.nodes() == 1 ? "" : "s", layout.ranks_per_node(), base.machine);
    *sink << fmt::format("# iters {} warmup {} check {}; time = median over iterations of the max over ranks\n", a.iters, a.warmup,
                         a.check);
    *sink << fmt::format("# busbw = algbw * 2(p-1)/p = algbw * {:.4f} (nccl-tests' allreduce factor)\n", factor);
  }

  std::vector<double> times(static_cast<std::size_t>(a.iters));
  std::uint64_t total_wrong = 0;
  for (const algo::Algorithm* alg : algorithms) {
    const std::string name = alg ? alg->name : "mpi";
    if (sink && a.format == "table") {
      *sink << fmt::format("#\n# {}: {}\n", name,
                           alg ? fmt::format("{} (channels {}, slice {} B)", alg->description, a.channels, tuning.slice_bytes)
                               : std::string("MPI_Allreduce of the MPI library, same buffers"));
      *sink << "#                                                              out-of-place                       in-place          \n"
               "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
               "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
    }
    std::uint64_t block_wrong = 0;
    double bw_sum = 0;
    int bw_n = 0;
    for (std::uint64_t bytes : sizes) {
      const algo::CollectiveArgs args = algo::CollectiveArgs::allreduce(bytes / elem, dtype, op, ranks);
      std::optional<algo::Schedule> sched;
      std::string unsupported;
      if (alg) {
        const algo::Support s = alg->supports(layout, args, tuning);
        if (!s.ok) unsupported = s.reason;
        else sched.emplace(alg->generate(layout, args, tuning));
      } else if (!mpi_type(dtype)) {
        unsupported = fmt::format("MPI has no {} type", algo::to_string(dtype));
      }
      if (!unsupported.empty()) {
        if (sink && a.format == "table") *sink << fmt::format(" {:>12} not supported: {}\n", bytes, unsupported);
        continue;
      }
      if (sched && scratch.size() < sched->scratch_count() * elem) scratch.resize(sched->scratch_count() * elem);

      Point points[2];
      for (int ip = 0; ip < 2; ++ip) {
        const bool in_place = ip == 1;
        void* in = input.data();
        void* outp = in_place ? input.data() : output.data();
        auto run_once = [&] {
          if (sched) {
            try {
              runtime::execute(*sched, rank, runtime::Buffers{in, outp, scratch.data()}, transport, exec);
            } catch (const std::exception& e) {
              // Not an input error of the command: only this rank may see it.
              throw std::runtime_error(fmt::format("rank {}: {} at {} B{}: {}", rank, name, bytes, in_place ? " in place" : "", e.what()));
            }
          } else {
            MPI_Allreduce(in_place ? MPI_IN_PLACE : in, outp, static_cast<int>(args.count), *mpi_type(dtype), mpi_op(op), comm.comm());
            if (op == algo::ReduceOp::Avg) runtime::finish_avg(dtype, outp, args.count, ranks);
          }
        };
        auto fresh = [&] {
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
          times[static_cast<std::size_t>(i)] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
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
          std::uint64_t wrong = 0;
          const std::uint64_t chunk = expected.size() / elem;
          for (std::uint64_t off = 0; off < args.count; off += chunk) {
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
        const double algbw = points[ip].time_us > 0 ? static_cast<double>(bytes) / (points[ip].time_us * 1e-6) / 1e9 : 0.0;
        const double busbw = algbw * factor;
        bw_sum += busbw;
        ++bw_n;
        row += fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_str(points[ip].time_us), algbw, busbw,
                           a.check ? fmt::format("{}", points[ip].wrong) : std::string("N/A"));
        if (a.format == "jsonl") {
          sim::Record rec = base;
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
  transport.flush();
  comm.barrier();
  if (sink_owner) sink_owner->close();
  return total_wrong ? 1 : 0;
}

}  // namespace topocoll::tools
