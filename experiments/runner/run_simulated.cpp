// Engine analytic | simgrid: each point through sim::simulate_point, as `topocoll sim` runs it.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <set>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "experiments/runner/grid.hpp"
#include "experiments/runner/provenance.hpp"
#include "experiments/runner/run.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/sweep.hpp"
#include "topologies/load.hpp"

namespace topocoll::experiments {

void run_simulated(const ExpSpec& s, const std::string& commit, const Existing& ex, RecordWriter& w,
                   const RunCallbacks& cb) {
  if (cb.start) cb.start();
  const auto advance = [&] {
    if (cb.advance) cb.advance(1);
  };
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
        const int known = known_ranks(s, ti, nodes);
        std::size_t todo = 0;
        for (const std::string& dtype : s.dtypes) {
          for (const std::string& ch : s.channels)
            for (const std::string& a : s.run_names())
              for (const GridSize& z : sizes_for(s, a, dtype, known))
                for (int rep = 0; rep < s.repetitions; ++rep)
                  todo += !ex.points.count(sim_point(s, ti, nodes, fabric, dtype, ch, a, z, rep));
          if (s.nccl_model)
            for (const GridSize& z : sizes_of(s, dtype, known))
              todo += !ex.points.count(model_point(s, ti, nodes, fabric, dtype, z));
        }
        if (todo == 0) continue;

        topo::TopologyOptions o;
        o.topology = s.topology_paths[ti];
        o.nodes = nodes;
        if (fabric) o.fabric = topo::parse_fabric(*fabric);
        o.oversubscription = s.oversubscription;
        o.transport = s.transport;
        o.merge_nvswitch_planes = true;  // as `topocoll sim`: the hardware stripes NVLink traffic over the planes
        topo::Topology t = [&] {
          try {
            return topo::load_topology(o);
          } catch (const InputError& e) {
            throw InputError(
                fmt::format("{}: grid point {} x nodes {}: {}", s.path, s.topologies[ti], grid_value(nodes), e.what()));
          }
        }();
        const algo::Layout layout = algo::layout_of(t);
        const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t, s.nccl);
        // Protocols, exactly as `topocoll sim` picks them: the spec's `protocol`, else the
        // calibration file's, else "auto": every protocol NCCL would enable on this topology (LL
        // and Simple; LL128 by NCCL's rule), each schedule run under each, the fastest kept.
        const sim::ProtocolSet protocols = sim::protocol_set(nccl, calib, s.protocol, "protocol");

        records::Record base = sim::simulated_base(t, engine->name(), s.topologies[ti], op, slice,
                                                   s.calibration.empty() ? calib.source : s.calibration);
        add_provenance(base, s, commit);
        base.collective = std::string(algo::to_string(s.collective));

        for (const std::string& dtype_name : s.dtypes) {
          const algo::DataType dtype = algo::parse_dtype(dtype_name);
          const std::vector<GridSize> sizes = sizes_of(s, dtype_name, t.num_ranks());
          // The call nccl-tests runs at each size (the point keys keep the size swept), or an
          // alltoallv's matrix; sizes that leave no element per rank (allgather, reduce_scatter,
          // alltoall) and empty matrices get no records.
          const auto call_at = [&](const GridSize& z) { return call_of(s, z, dtype, op, t.num_ranks()); };
          const auto empty_note = [&](const GridSize& z) {
            const std::string note =
                z.matrix >= 0 ? fmt::format("alltoallv of {}: no element to send: no records", z.key)
                              : fmt::format("{} of {} bytes on {} ranks: fewer elements than ranks: no records",
                                            algo::to_string(s.collective), z.bytes, t.num_ranks());
            if (notes.insert(note).second && cb.note) cb.note(note);
            advance();
          };
          for (const std::string& ch : s.channels) {
            algo::Tuning tuning;
            // "nccl": each call on the channels stock NCCL gives a call of its size and protocol on
            // this topology (at most comm->nChannels), as `topocoll sim --channels nccl`.
            tuning.channels = ch == "nccl" ? sim::nccl_channels(nccl) : std::stoi(ch);
            const sim::ChannelRule rule{tuning.channels, ch == "nccl"};
            tuning.slice_bytes = slice;
            for (const std::string& a : s.run_names()) {
              const algo::Algorithm* file_alg = s.file_algorithm(a);
              const algo::Algorithm& alg = file_alg ? *file_alg : algo::find_algorithm(a);
              for (const GridSize& z : sizes_for(s, a, dtype_name, t.num_ranks())) {
                const algo::CollectiveArgs args = call_at(z);
                const std::uint64_t bytes = algo::nccl_tests_bytes(args);
                const algo::Support sup = alg.supports(layout, args, tuning);
                std::optional<records::Record> simulated;
                for (int rep = 0; rep < s.repetitions; ++rep) {
                  const std::string point = sim_point(s, ti, nodes, fabric, dtype_name, ch, a, z, rep);
                  if (ex.points.count(point)) continue;
                  if (bytes == 0) {
                    empty_note(z);
                    continue;
                  }
                  if (!sup.ok) {
                    const std::string note = fmt::format("{} on {} x {} nodes: not supported ({}): no records", a,
                                                         s.topologies[ti], t.nodes(), sup.reason);
                    if (notes.insert(note).second && cb.note) cb.note(note);
                    advance();
                    continue;
                  }
                  // Simulated engines are deterministic: the repetitions of a point share one run.
                  if (!simulated) {
                    // A schedule file keeps its own channels.
                    const sim::ChannelRule point_rule = file_alg ? sim::ChannelRule{tuning.channels, false} : rule;
                    simulated = sim::simulate_point(*engine, t, sim::schedule_maker(alg, layout, args, tuning),
                                                    point_rule, nccl, protocols, base, a, bytes, args.count, dtype)
                                    .record;
                  }
                  records::Record rec = *simulated;
                  if (file_alg) rec.slice_bytes = 0;  // a schedule file slices as it says
                  rec.repetition = rep;
                  rec.point = point;
                  rec.date = records::now_iso8601();
                  w.write(rec);
                  advance();
                }
              }
            }
          }
          // The stock-NCCL reference: what NCCL would pick per size and how long it predicts.
          if (s.nccl_model)
            for (const GridSize& z : sizes) {
              const std::string point = model_point(s, ti, nodes, fabric, dtype_name, z);
              if (ex.points.count(point)) continue;
              if (algo::nccl_tests_bytes(call_at(z)) == 0) {
                empty_note(z);
                continue;
              }
              records::Record rec = sim::nccl_model_point(nccl, base, z.bytes, dtype, s.collective, op);
              rec.repetition = 0;
              rec.point = point;
              rec.date = records::now_iso8601();
              w.write(rec);
              advance();
            }
        }
      }
}

}  // namespace topocoll::experiments
