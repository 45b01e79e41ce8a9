// Shared by the simulator's test suites: a topology from a preset, as the simulator sees it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "topologies/load.hpp"

namespace topocoll::sim::testing {

// `nodes` copies of `preset` on `fabric`, NVSwitch planes merged (the simulator's view).
inline topo::Topology load(const std::string& preset, int nodes,
                           topo::FabricKind fabric = topo::FabricKind::SingleSwitch) {
  topo::TopologyOptions o{preset};
  o.nodes = nodes;
  o.fabric = fabric;
  o.merge_nvswitch_planes = true;
  return topo::load_topology(o);
}

// A hand-built NVLS allreduce of `count` float32 on `ranks` GPUs of one NVSwitch, as NCCL's
// NVLS runs it (multimem.ld_reduce, then multimem.st): the data is cut into parts, part
// (i, channel c, chunk m) owned by rank i. Switch group i reduces every rank's part i to rank i
// (reduce-scatter: all ranks contribute, i receives); group ranks + i multicasts rank i's
// reduced part to every rank (all-gather: i contributes, all receive). On each channel a rank
// gives all its reduce-scatter parts at once (switch_send does not block), then per chunk
// receives its reduced part and multicasts it, then receives every rank's multicasts (they
// land meanwhile: a receive only takes a landed result). Per GPU and direction that
// moves S (1 + 1/N) bytes: S up for the reduce-scatter and S/N for the multicast, S/N down for
// its reduced part and S for the multicast. `count` must divide by ranks x channels x chunks.
inline algo::Schedule nvls_allreduce(int ranks, std::uint64_t count, int channels, int chunks) {
  using algo::BufferId;
  using algo::Chunk;
  const std::uint64_t part = count / static_cast<std::uint64_t>(ranks * channels * chunks);
  auto at = [&](int i, int c, int m) {
    return ((static_cast<std::uint64_t>(c) * static_cast<std::uint64_t>(chunks) + static_cast<std::uint64_t>(m)) *
                static_cast<std::uint64_t>(ranks) +
            static_cast<std::uint64_t>(i)) *
           part;
  };
  std::vector<algo::Program> programs(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    algo::ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    for (int c = 0; c < channels; ++c) {
      for (int m = 0; m < chunks; ++m)
        for (int i = 0; i < ranks; ++i) b.switch_send(i, Chunk{BufferId::Input, at(i, c, m), part}, c);
      for (int m = 0; m < chunks; ++m) {
        b.switch_recv(r, Chunk{BufferId::Output, at(r, c, m), part}, c);
        b.switch_send(ranks + r, Chunk{BufferId::Output, at(r, c, m), part}, c);
      }
      for (int m = 0; m < chunks; ++m)
        for (int i = 0; i < ranks; ++i) b.switch_recv(ranks + i, Chunk{BufferId::Output, at(i, c, m), part}, c);
    }
  }
  algo::CollectiveArgs args =
      algo::CollectiveArgs::allreduce(count, algo::DataType::Float32, algo::ReduceOp::Sum, ranks);
  algo::Schedule s = algo::Schedule::from_programs("nvls-hand-made", args, channels, 0, std::move(programs));
  std::vector<int> all(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) all[static_cast<std::size_t>(r)] = r;
  for (int i = 0; i < ranks; ++i) s.add_switch_group({algo::SwitchKind::Nvls, all, {i}});
  for (int i = 0; i < ranks; ++i) s.add_switch_group({algo::SwitchKind::Nvls, {i}, all});
  return s;
}

// A SHARP allreduce of `count` float32 on `ranks` GPUs: one switch group of every rank
// (contributors and receivers); on each channel `chunks` instances, each rank giving its chunk and
// receiving the reduction. `count` must divide by channels x chunks.
inline algo::Schedule sharp_allreduce(int ranks, std::uint64_t count, int channels, int chunks) {
  using algo::BufferId;
  using algo::Chunk;
  const std::uint64_t part = count / static_cast<std::uint64_t>(channels * chunks);
  std::vector<algo::Program> programs(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    algo::ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    for (int c = 0; c < channels; ++c) {
      for (int m = 0; m < chunks; ++m)
        b.switch_send(0, Chunk{BufferId::Input, static_cast<std::uint64_t>(c * chunks + m) * part, part}, c);
      for (int m = 0; m < chunks; ++m)
        b.switch_recv(0, Chunk{BufferId::Output, static_cast<std::uint64_t>(c * chunks + m) * part, part}, c);
    }
  }
  algo::CollectiveArgs args =
      algo::CollectiveArgs::allreduce(count, algo::DataType::Float32, algo::ReduceOp::Sum, ranks);
  algo::Schedule s = algo::Schedule::from_programs("sharp-hand-made", args, channels, 0, std::move(programs));
  std::vector<int> all(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) all[static_cast<std::size_t>(r)] = r;
  s.add_switch_group({algo::SwitchKind::Sharp, all, all});
  return s;
}

}  // namespace topocoll::sim::testing
