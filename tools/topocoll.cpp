// topocoll: the command line over the library.
//   topocoll topo show|check|export|path|presets ...
// Exit status: 0 success (check: even when it finds problems), 2 bad input, 1 internal error.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "simulator/simgrid/simgrid_engine.hpp"
#include "tools/advise_command.hpp"
#include "tools/algo_commands.hpp"
#include "tools/calibrate_command.hpp"
#include "tools/exp_command.hpp"
#include "tools/import_command.hpp"
#include "tools/sim_command.hpp"
#include "tools/topo_commands.hpp"
#include "tools/tune_command.hpp"
#include "topologies/transports.hpp"

namespace {

constexpr const char* kTopoExamples = R"(
Examples:
  topocoll topo show   --topology dgx-h100 --nodes 128 --fabric rail-fat-tree
  topocoll topo show   --topology ibm-h100x8-dump.xml --format json
  topocoll topo check  --topology pcie-8gpu
  topocoll topo export --topology dgx-a100 --nodes 4 --format dot -o cluster.dot
  topocoll topo path   --topology dgx-h100 --nodes 2 --from n0/gpu0 --to n1/gpu3
  topocoll topo presets
T is a preset (`topocoll topo presets`), an NCCL topology .xml file, a node .yaml or a .yaml cluster spec.)";

constexpr const char* kAlgoExamples = R"(
Examples:
  topocoll algorithms
  topocoll verify --topology dgx-h100 --nodes 128 --algorithm all
  topocoll verify --topology dgx-a100 --nodes 3 --algorithm ring,dbt --count 1000 --channels 3 --in-place
  topocoll verify --schedule my-schedule.json
  topocoll verify --layout 1x1024 --nvls --algorithm nvls
  topocoll verify --topology dgx-h100 --nodes 128 --sharp --algorithm nvls-tree,collnet
  topocoll verify --topology dgx-a100 --nodes 2 --collective broadcast --root 5
  topocoll schedule export --topology dgx-h100 --nodes 2 --algorithm dbt --count 4096 -o dbt.json
  topocoll schedule export --topology dgx-h100 --algorithm ring --count 1024 --format msccl -o ring.xml
  topocoll verify --schedule ring.xml --count 64K)";

void add_topology_flags(CLI::App* cmd, topocoll::tools::TopoArgs& a, bool required = true) {
  auto* t = cmd->add_option("--topology,-t", a.topology, "preset name, NCCL topology XML file or YAML cluster spec");
  if (required) t->required();
  cmd->add_option("--nodes,-N", a.nodes, "number of nodes (1..16384); default 1 or the spec's");
  cmd->add_option("--fabric", a.fabric,
                  "single-switch | rail-fat-tree | fat-tree | multi-plane | dragonfly (default rail-fat-tree)");
  cmd->add_option("--oversubscription", a.oversubscription, "leaf down:up bandwidth ratio, >= 1 (default 1)");
  cmd->add_option("--transport", a.transport,
                  "network technology: " + topocoll::topo::transport_names() + " (default: the node's NICs)");
  cmd->add_option("--ecmp", a.ecmp, "equal-cost paths: hash (per-flow hash, collisions) | ideal (default hash)");
  cmd->add_option("--nics-per-gpu", a.nics_per_gpu, "make each NIC of the node this many (1..16; default 1)");
  cmd->add_flag("--no-pxn", a.no_pxn, "no PXN: a GPU sends through its own NIC (NCCL_PXN_DISABLE=1)");
  cmd->add_flag("--sharp", a.sharp,
                "the network's switches reduce (SHARP on Quantum InfiniBand): SHARP switch groups run, and the "
                "NCCL model considers CollNet");
}

// The malloc this process runs with, as found at run time: jemalloc when its API is linked in
// (tools/CMakeLists.txt links it ahead of the C library, so its malloc is the one every library
// resolves to), else the C library's.
const char* allocator() {
  return dlsym(RTLD_DEFAULT, "mallctl") != nullptr ? "jemalloc" : "glibc";
}

// `topocoll tune`: the tuner table for NCCL (tools/tune_command.hpp, docs/tuner.md).
CLI::App* add_tune_command(CLI::App& app, topocoll::tools::TuneArgs& a) {
  CLI::App* c =
      app.add_subcommand("tune", "the NCCL tuner table: the fastest NCCL algorithm/protocol/channels per size");
  add_topology_flags(c, a.topo);
  c->add_option("--algorithm,-a", a.algorithm, "candidates with an NCCL counterpart: comma list or 'all'")
      ->default_val("all");
  c->add_option("-b,--minbytes", a.min_bytes, "smallest size (8, 1K, 1M, 1G)")->default_val("8");
  c->add_option("-e,--maxbytes", a.max_bytes, "largest size")->default_val("1G");
  c->add_option("-f,--stepfactor", a.factor, "multiplication factor between sizes")->default_val("2");
  c->add_option("--channels", a.channels, "nccl (each algorithm with stock NCCL's channels) or 1 to 64")
      ->default_val("nccl");
  c->add_option("--slice", a.slice, "pipelining slice in bytes")->default_val("512K");
  c->add_option("--engine", a.engine, "analytic | simgrid")->default_val("analytic");
  c->add_option("--calibration", a.calibration, "calibration JSON file (docs/simulator.md)");
  c->add_option("--protocol", a.protocol, "auto | LL | LL128 | Simple")->default_val("auto");
  c->add_option("--format", a.format, "topocoll (libnccl-tuner-topocoll.so) | nccl-example (NCCL's example tuner)")
      ->default_val("topocoll");
  c->add_option("-o,--output", a.output, "the table file (default stdout)");
  c->add_option("--nccl-version", a.nccl_version, "NCCL release: 2.22.3 | 2.28.9")->default_val("2.28.9");
  c->add_option("--nccl-env", a.nccl_env, "NCCL variable for the model, KEY=VALUE, repeatable (as sim's)");
  c->footer(R"(
Examples:
  topocoll tune --topology dgx-h100 --nodes 16 --fabric rail-fat-tree -b 8 -e 1G -o dgx-h100x16.tuner
  NCCL_TUNER_PLUGIN=topocoll TOPOCOLL_TUNER_TABLE=dgx-h100x16.tuner mpirun ... (build/lib on LD_LIBRARY_PATH)
  topocoll tune --topology dgx-h100 --nodes 16 --format nccl-example -o nccl_tuner.conf
Table format and use: docs/tuner.md.)");
  return c;
}

}  // namespace

// `topocoll bench ARGS...` runs topocoll-bench, installed next to this executable: MPI lives in
// that program only (libsimgrid, linked here, defines MPI_Init & co. for SMPI). exec keeps the
// process id and the environment, so `mpirun -np 4 topocoll bench ...` works as it reads.
int exec_bench(int argc, char** argv) {
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string dir = n > 0 ? self.substr(0, static_cast<std::size_t>(n)) : std::string(argv[0]);
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  const std::string bench = dir + "topocoll-bench";
  std::vector<char*> args{const_cast<char*>(bench.c_str())};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(bench.c_str(), args.data());
  std::fprintf(stderr, "topocoll: error: bench: cannot run %s: %s (built only when MPI is found)\n", bench.c_str(),
               std::strerror(errno));
  return 2;
}

int main(int argc, char** argv) {
  topocoll::sim::register_simgrid_engine();  // --engine simgrid (simulator/engine.hpp)
  if (argc > 1 && std::string(argv[1]) == "bench") return exec_bench(argc, argv);
  CLI::App app{"topocoll: topology-aware collective algorithms (topologies, schedules, simulation, runtime)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("topocoll ") + TOPOCOLL_VERSION + " (malloc: " + allocator() + ")");
  app.footer(
      "Commands: topo (show|check|export|path|presets), algorithms, verify, schedule export, sim, tune, import "
      "nccl-tests, calibrate, exp "
      "(run|compare), "
      "bench (runs topocoll-bench: measured, under mpirun). Each has --help with examples.");
  CLI::App* topo = app.add_subcommand("topo", "inspect, check and export cluster topologies");
  topo->require_subcommand(1);
  topo->footer(kTopoExamples);

  topocoll::tools::TopoArgs args;
  CLI::App* show = topo->add_subcommand("show", "summarise a topology (counts, links, paths, allreduce bound)");
  add_topology_flags(show, args);
  show->add_option("--format", args.format, "text | json")->default_val("text");
  show->add_flag("--no-bounds", args.no_bounds, "skip the max-flow allreduce bound");
  show->footer(kTopoExamples);

  CLI::App* check = topo->add_subcommand("check", "diagnostics: NIC/NUMA placement, P2P, odd nodes, slow links");
  add_topology_flags(check, args);
  check->footer("Exit status 0 even when problems are found; 2 on bad input.\n" + std::string(kTopoExamples));

  CLI::App* exp = topo->add_subcommand("export", "write the topology as Graphviz DOT, a SimGrid platform or JSON");
  add_topology_flags(exp, args);
  exp->add_option("--format", args.format, "dot | simgrid | json")->required();
  exp->add_option("-o,--output", args.output, "output file (default: stdout)");
  exp->footer(kTopoExamples);

  CLI::App* path = topo->add_subcommand("path", "the widest-then-shortest path between two devices");
  add_topology_flags(path, args);
  path->add_option("--from", args.from, "device name, e.g. n0/gpu0")->required();
  path->add_option("--to", args.to, "device name, e.g. n1/gpu3")->required();
  path->footer(kTopoExamples);

  CLI::App* list = topo->add_subcommand("presets", "list the node presets");

  topocoll::tools::AlgoArgs algo_args;
  auto add_algo_flags = [&](CLI::App* cmd, bool o_is_op) {
    cmd->add_option("--algorithm,-a", algo_args.algorithm, "algorithm name, comma list or 'all'")->default_val("all");
    cmd->add_option("--count,-c", algo_args.count, "elements per rank (8, 64K, 1M); default ranks x channels x 64");
    cmd->add_option("--channels", algo_args.channels, "channels (default 2)")->default_val(2);
    cmd->add_option("--slice", algo_args.slice, "pipelining slice in bytes (default 1M)")->default_val("1M");
    cmd->add_option("--dtype,-d", algo_args.dtype, "data type (default float)")->default_val("float");
    cmd->add_option(o_is_op ? "--op,-o" : "--op", algo_args.op, "reduction (default sum)")->default_val("sum");
    cmd->add_option("--root", algo_args.root, "root rank of broadcast / reduce (default 0)")->default_val(0);
    cmd->add_option("--sizes", algo_args.sizes,
                    "alltoallv: the size matrix, one row per rank of the element counts it sends each rank");
  };
  CLI::App* algs = app.add_subcommand("algorithms", "list the registered algorithms");
  algs->footer(kAlgoExamples);
  CLI::App* verify =
      app.add_subcommand("verify", "prove schedules correct (symbolic execution); exit 1 if one is wrong");
  add_topology_flags(verify, algo_args.topo, false);
  add_algo_flags(verify, true);
  verify->add_option("--collective", algo_args.collective,
                     "only the algorithms of this collective (allreduce, allgather, reduce_scatter, broadcast, reduce, "
                     "alltoall, alltoallv); default every one");
  verify->add_option("--schedule", algo_args.schedule,
                     "verify a schedule file instead (topocoll JSON, or MSCCL XML at --count N)");
  verify->add_flag("--in-place", algo_args.in_place, "verify with input and output aliased");
  verify->add_option("--layout", algo_args.layout,
                     "NxG: N nodes of G ranks each instead of a topology (e.g. 1x1024 or 128x8)");
  verify->add_flag("--nvls", algo_args.nvls, "every node has NVLS (NVSwitch multicast; on a topology: as if)");
  verify
      ->add_option("--nvlink-domain", algo_args.nvlink_domain,
                   "with --layout: K consecutive nodes share one NVLink domain (e.g. 18x4 --nvlink-domain 18, "
                   "an NVL72)")
      ->default_val(1);
  verify->footer(kAlgoExamples);
  CLI::App* schedule = app.add_subcommand("schedule", "schedule interchange");
  schedule->require_subcommand(1);
  CLI::App* sexport = schedule->add_subcommand("export", "write an algorithm's schedule as JSON or MSCCL XML");
  add_topology_flags(sexport, algo_args.topo);
  add_algo_flags(sexport, false);
  sexport->add_option("-o,--output", algo_args.output, "output file (default: stdout)");
  sexport
      ->add_option("--format", algo_args.format,
                   "json (topocoll's schedule JSON, for the count given) or msccl (MSCCL XML, size-generic)")
      ->default_val("json");
  sexport->footer(kAlgoExamples);

  constexpr const char* kSimExamples = R"(
Examples:
  topocoll sim --topology dgx-h100 --nodes 128 --fabric rail-fat-tree --algorithm ring,dbt,hierarchical -b 1K -e 1G -f 4
  topocoll sim --topology dgx-a100 --nodes 2 --algorithm all -b 8 -e 1G -f 2 --engine simgrid
  topocoll sim --topology pcie-8gpu --algorithm ring -b 1M -e 1G --format jsonl -O records.jsonl
  topocoll sim --topology dgx-h100 --nodes 2 --format nccl-tests -O 'h100x2-{algorithm}.log'   # one log per algorithm
  topocoll sim --topology dgx-h100 --nodes 4 --algorithm dbt -b 64M -e 64M --trace dbt.json   # open in ui.perfetto.dev
  topocoll sim --topology dgx-h100 --algorithm ring --nccl-version 2.28.9 --nccl-env NCCL_NVLS_ENABLE=0 --nccl-env NCCL_PROTO=^LL128
  topocoll sim --topology dgx-h100 --nodes 4 --collective allgather -b 1K -e 1G -f 4
  topocoll sim --topology dgx-a100 --collective broadcast --root 3 --algorithm all
The trace covers one run: the first algorithm at the largest size.)";
  topocoll::tools::SimArgs sim_args;
  CLI::App* simc = app.add_subcommand("sim", "simulate collective algorithms over a size sweep (nccl-tests table)");
  add_topology_flags(simc, sim_args.topo);
  simc->add_option("--collective", sim_args.collective,
                   "allreduce | allgather | reduce_scatter | broadcast | reduce | alltoall | alltoallv (sizes as "
                   "nccl-tests'; alltoallv: --sizes)")
      ->default_val("allreduce");
  simc->add_option("--root", sim_args.root, "root rank of broadcast / reduce")->default_val(0);
  simc->add_option("--algorithm", sim_args.algorithm,
                   "algorithms of the collective: comma list or 'all' (default: ring,dbt,hierarchical for "
                   "allreduce, all for the others)");
  simc->add_option("-b,--minbytes", sim_args.min_bytes, "smallest size (8, 1K, 1M, 1G)")->default_val("8");
  simc->add_option("-e,--maxbytes", sim_args.max_bytes, "largest size")->default_val("128M");
  simc->add_option("-f,--stepfactor", sim_args.factor, "multiplication factor between sizes")->default_val("2");
  // -d / -o as nccl-tests' and topocoll-bench's; --dtype stays as a hidden alias.
  simc->add_option("-d,--datatype,--dtype", sim_args.dtype, "data type")->default_val("float");
  simc->add_option("-o,--op", sim_args.op, "reduction: sum prod min max avg")->default_val("sum");
  simc->add_option("--channels", sim_args.channels,
                   "channels: nccl (what stock NCCL runs with on the topology) or 1 to 64")
      ->default_val("nccl");
  simc->add_option("--slice", sim_args.slice, "pipelining slice in bytes")->default_val("512K");
  simc->add_option("--engine", sim_args.engine, "simgrid | analytic")->default_val("analytic");
  simc->add_option("--calibration", sim_args.calibration, "calibration JSON file (docs/simulator.md)");
  simc->add_option("--protocol", sim_args.protocol,
                   "NCCL protocol: auto | LL | LL128 | Simple (default: the calibration's, else auto)");
  simc->add_option("--format", sim_args.format, "table | csv | jsonl | nccl-tests (all_reduce_perf's table)")
      ->default_val("table");
  simc->add_option("--nccl-tests-layout", sim_args.nccl_tests_layout,
                   "--format nccl-tests: current (nccl-tests 2.17 and later) | classic (earlier releases)")
      ->default_val("current");
  simc->add_option("-O,--output", sim_args.output,
                   "output file (default stdout); with --format nccl-tests, a name holding {algorithm} writes one "
                   "file per algorithm");
  simc->add_option("--trace", sim_args.trace, "write a Chrome-trace / Perfetto timeline JSON");
  simc->add_flag("-q,--quiet", sim_args.quiet, "no progress on stderr (printed for a sweep longer than 5 s)");
  simc->add_option("-j,--jobs", sim_args.jobs,
                   "threads for the points, the output unchanged (analytic engine; default 0: the machine's "
                   "hardware threads; fewer points than threads: a point uses the idle ones; simgrid: 1)")
      ->default_val(0);
  simc->add_option("--trace-algorithm", sim_args.trace_algorithm, "the algorithm --trace covers (default the first)");
  simc->add_option("--trace-size", sim_args.trace_size, "the size --trace covers (default the largest)");
  simc->add_option("--trace-ranks", sim_args.trace_ranks,
                   "the ranks --trace writes, e.g. 0-15,1016-1023 (default all up to 64, else the first and last 4)");
  simc->add_option("--trace-max-slices", sim_args.trace_max_slices,
                   "about the most slices --trace writes: past it, each track's consecutive operations of one kind "
                   "and peer merge (default 750000, under 200 MB; 0: one slice per operation)")
      ->check([](const std::string& v) {
        return v.find('-') != std::string::npos ? "got " + v + ", expected a number of slices, 0 or more"
                                                : std::string();
      });
  simc->add_flag("--no-nccl-model", sim_args.no_nccl_model, "skip the stock-NCCL reference model");
  simc->add_option("--nccl-version", sim_args.nccl_version,
                   "NCCL release the stock-NCCL model follows: 2.22.3 | 2.28.9")
      ->default_val("2.28.9");
  simc->add_option("--nccl-env", sim_args.nccl_env,
                   "NCCL variable for the model, KEY=VALUE, repeatable (NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS, "
                   "NCCL_MAX_NCHANNELS, NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE; also read from the environment)");
  simc->add_flag("--simgrid-plain", sim_args.simgrid_plain,
                 "simgrid engine: every transfer through SimGrid as shipped, no fast paths (same results, slower)");
  simc->add_flag("--no-symmetry", sim_args.no_symmetry,
                 "analytic engine: simulate every rank, not one per orbit of a rank shift (same results, slower)");
  simc->add_option("--schedule", sim_args.schedules,
                   "schedule file to simulate (topocoll JSON or MSCCL XML), repeatable; alone, it replaces "
                   "--algorithm's default");
  simc->add_flag("--no-verify", sim_args.no_verify, "simulate --schedule files without proving them first");
  simc->add_option("--sizes", sim_args.sizes_file,
                   "alltoallv: the size matrix, one row per rank of the element counts it sends each rank");
  simc->footer(kSimExamples);

  constexpr const char* kExpExamples = R"(
Examples:
  topocoll exp run experiments/ring-vs-dbt-vs-hierarchical/experiment.yaml
  topocoll exp run experiments/field-scenarios/experiment.yaml -o /tmp/field --fresh
  topocoll exp compare experiments/field-scenarios/records.jsonl /tmp/field/records.jsonl
  mpirun -np 4 topocoll exp run experiments/field-scenarios/experiment.yaml -o /tmp/field4   # 4 shards, merged
Spec format, resumption and provenance: docs/experiments.md.)";
  topocoll::tools::ExpArgs exp_args;
  CLI::App* expc = app.add_subcommand("exp", "experiments: run a checked-in spec, compare record files");
  expc->require_subcommand(1);
  expc->footer(kExpExamples);
  CLI::App* exprun = expc->add_subcommand(
      "run", "run an experiment spec's grid into DIR/records.jsonl (NAME.yaml: records-NAME.jsonl), resumable");
  exprun->add_option("spec", exp_args.spec, "experiments/NAME/experiment.yaml")->required();
  exprun->add_option("-o,--output", exp_args.output_dir, "output folder (default: the spec's folder)");
  exprun->add_flag("--fresh", exp_args.fresh, "start over: remove the records file first");
  exprun->add_flag("-q,--quiet", exp_args.quiet, "no progress on stderr");
  exprun->add_option("--shard", exp_args.shard,
                     "I/N: run shard I (from 0) of N into DIR/records.shard-I-of-N.jsonl (default: from mpirun, srun "
                     "or a Slurm job array; --shard 0/1: one process)");
  exprun->footer(kExpExamples);
  CLI::App* expmerge = expc->add_subcommand(
      "merge", "merge the finished shards' parts of a sharded run into DIR/records.jsonl (a run does it when it can)");
  expmerge->add_option("spec", exp_args.spec, "experiments/NAME/experiment.yaml")->required();
  expmerge->add_option("-o,--output", exp_args.output_dir, "output folder (default: the spec's folder)");
  expmerge->footer(kExpExamples);
  CLI::App* expcmp =
      expc->add_subcommand("compare", "same points, same values? (date, machine, commit ignored); exit 1 if not");
  expcmp->add_option("files", exp_args.compare, "two records.jsonl files")->required()->expected(2);
  expcmp->footer(kExpExamples);

  topocoll::tools::TuneArgs tune_args;
  CLI::App* tunec = add_tune_command(app, tune_args);
  topocoll::tools::ImportArgs import_args;
  CLI::App* importc = topocoll::tools::add_import_command(app, import_args);
  topocoll::tools::CalibrateArgs calibrate_args;
  CLI::App* calibratec = topocoll::tools::add_calibrate_command(app, calibrate_args, add_topology_flags);
  topocoll::tools::AdviseArgs advise_args;
  CLI::App* advisec = topocoll::tools::add_advise_command(app, advise_args, add_topology_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "topocoll: error: %s (see --help)\n", topocoll::cli::one_line(e.what()).c_str());
    return 2;
  }

  try {
    if (*show) return topocoll::tools::topo_show(args, std::cout);
    if (*check) return topocoll::tools::topo_check(args, std::cout);
    if (*exp) return topocoll::tools::topo_export(args, std::cout);
    if (*path) return topocoll::tools::topo_path(args, std::cout);
    if (*list) return topocoll::tools::topo_presets(std::cout);
    if (*algs) return topocoll::tools::algorithms_list(std::cout);
    if (*simc) {
      sim_args.algorithm_given = simc->count("--algorithm") > 0;
      sim_args.sizes_given = simc->count("-b") + simc->count("-e") > 0;
      sim_args.dtype_given = simc->count("--datatype") > 0;
      sim_args.op_given = simc->count("--op") > 0;
      sim_args.collective_given = simc->count("--collective") > 0;
      sim_args.root_given = simc->count("--root") > 0;
      return topocoll::tools::sim_command(sim_args, std::cout);
    }
    if (*tunec) return topocoll::tools::tune_command(tune_args, std::cout);
    if (*importc) return topocoll::tools::import_command(import_args, std::cout);
    if (*calibratec) return topocoll::tools::calibrate_command(calibrate_args, std::cout);
    if (*advisec) return topocoll::tools::advise_command(advise_args, std::cout);
    if (*exprun) {
      exp_args.shard_given = exprun->count("--shard") > 0;
      return topocoll::tools::exp_run(exp_args, std::cout);
    }
    if (*expcmp) return topocoll::tools::exp_compare(exp_args, std::cout);
    if (*expmerge) return topocoll::tools::exp_merge(exp_args, std::cout);
    if (*verify) return topocoll::tools::verify_command(algo_args, std::cout);
    if (*sexport) return topocoll::tools::schedule_export(algo_args, std::cout);
  } catch (const topocoll::InputError& e) {
    std::fprintf(stderr, "topocoll: error: %s\n", topocoll::cli::one_line(e.what()).c_str());
    return 2;
  } catch (const topocoll::ScheduleError& e) {  // the schedule is wrong (common/errors.hpp): exit 1, as verify's
    std::fprintf(stderr, "topocoll: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "topocoll: internal error: %s\n", topocoll::cli::one_line(e.what()).c_str());
    return 1;
  }
  return 0;
}
