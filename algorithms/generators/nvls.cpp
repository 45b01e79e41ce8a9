// nvls: NCCL's NVLS allreduce inside one NVLink domain (one node, or the nodes of one domain:
// Layout::nvlink_domain, the trays of an NVL72). The NVSwitch reduces: per
// channel the data is cut into one segment per rank, and every piece of it goes through two
// switch operations (contract rule 11):
//
//   reduce-scatter   every rank  --switch_send(rs_j, piece of segment j)-->  NVSwitch
//                    rank j      <--switch_recv(rs_j)--  the sum over all ranks (multimem.ld_reduce)
//   all-gather       rank j      --switch_send(ag_j, its reduced piece)-->  NVSwitch
//                    every rank  <--switch_recv(ag_j)--  that piece (multimem.st, a multicast)
//
// Pieces are pipelined like ring slices: reduce-scatter parts run `pipeline_depth` pieces ahead
// of their reductions, and the multicasts as many ahead of their receives. A piece is one slice of the channel's data
// (Tuning::slice_bytes), so each rank's share of it is slice / p: with the default 1 MiB slice on 8 GPUs, 128 KiB,
// NCCL's NVLS chunk (NCCL_NVLS_CHUNKSIZE default 128 * 1024, src/transport/nvls.cc, 2.28). The same stage is
// hierarchical's NVLS intra-node stage (hierarchical.cpp). Cost sheets in docs/algorithms.md use the names below: p
// ranks, K channels, S bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

NvlsGroups add_nvls_groups(Schedule& s, std::span<const int> members) {
  NvlsGroups g;
  g.members = static_cast<int>(members.size());
  const std::vector<int> all(members.begin(), members.end());
  g.rs = static_cast<int>(s.switch_groups().size());
  for (int j : members) s.add_switch_group(SwitchGroup{SwitchKind::Nvls, all, {j}});
  g.ag = static_cast<int>(s.switch_groups().size());
  for (int j : members) s.add_switch_group(SwitchGroup{SwitchKind::Nvls, {j}, all});
  return g;
}

void nvls_reduce_scatter_send(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of,
                              const std::vector<Chunk>& src, std::uint64_t pieces, std::uint64_t k, int channel) {
  for (std::size_t j = 0; j < src.size(); ++j) b.switch_send(g.rs + local_of[j], slice(src[j], pieces, k), channel);
}

void nvls_reduce_scatter_recv(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of, int pos,
                              const std::vector<Chunk>& dst, std::uint64_t pieces, std::uint64_t k, int channel) {
  b.switch_recv(g.rs + local_of[static_cast<std::size_t>(pos)], slice(dst[static_cast<std::size_t>(pos)], pieces, k),
                channel);
}

void nvls_allgather_send(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of, int pos,
                         const std::vector<Chunk>& seg, std::uint64_t pieces, std::uint64_t k, int channel) {
  b.switch_send(g.ag + local_of[static_cast<std::size_t>(pos)], slice(seg[static_cast<std::size_t>(pos)], pieces, k),
                channel);
}

void nvls_allgather_recv(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of,
                         const std::vector<Chunk>& seg, std::uint64_t pieces, std::uint64_t k, int channel) {
  for (std::size_t j = 0; j < seg.size(); ++j) b.switch_recv(g.ag + local_of[j], slice(seg[j], pieces, k), channel);
}

namespace {

int nvls_channels(const Tuning& t) {
  return std::max(1, t.channels);
}

Schedule make_nvls(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = nvls_channels(t);
  // The domain's ranks, node after node (one node, or the trays of one NVLink domain).
  std::vector<int> members;
  for (const auto& node : l.node_ranks) members.insert(members.end(), node.begin(), node.end());
  const int p = static_cast<int>(members.size());
  auto pos_of = std::make_shared<std::vector<int>>(positions(members, l.ranks));
  auto local_of = std::make_shared<std::vector<int>>();
  for (int j = 0; j < p; ++j) local_of->push_back(j);
  const std::uint64_t se = slice_elems(a, t);
  const std::uint64_t w = static_cast<std::uint64_t>(std::max(1, t.pipeline_depth));
  auto groups = std::make_shared<NvlsGroups>();  // filled below, before any program is generated
  Schedule s("nvls", a, K, 0, [=](int rank, Program& prog) {
    ProgramBuilder b(prog);
    const NvlsGroups& g = *groups;
    const int pos = (*pos_of)[static_cast<std::size_t>(rank)];
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      const std::vector<Chunk> in = segments(BufferId::Input, mine, p), outs = segments(BufferId::Output, mine, p);
      const std::uint64_t pieces = slice_count(mine.count, se);
      // Three stages in flight: piece k's parts go up, piece k - w is reduced and multicast, and
      // piece k - 2w's multicasts are received.
      for (std::uint64_t k = 0; k < pieces + 2 * w; ++k) {
        if (k < pieces) nvls_reduce_scatter_send(b, g, *local_of, in, pieces, k, c);
        if (k >= w && k < pieces + w) {
          nvls_reduce_scatter_recv(b, g, *local_of, pos, outs, pieces, k - w, c);
          nvls_allgather_send(b, g, *local_of, pos, outs, pieces, k - w, c);
        }
        if (k >= 2 * w) nvls_allgather_recv(b, g, *local_of, outs, pieces, k - 2 * w, c);
      }
    }
  });
  *groups = add_nvls_groups(s, members);
  return s;
}

Support supports_nvls(const Layout& l, const CollectiveArgs&, const Tuning&) {
  if (!l.one_nvlink_domain())
    return Support::no(
        fmt::format("needs one NVLink domain (one node); the layout has {} nodes: across nodes use "
                    "nvls-tree or hierarchical-nvls",
                    l.nodes));
  if (!l.nvls_everywhere())
    return Support::no(
        fmt::format("needs NVLS (NVSwitch multicast on GPUs of sm 90 or later, NCCL's nvlsSupport); {} has none",
                    l.nodes == 1 ? std::string("the node") : fmt::format("node {}", l.first_node_without_nvls())));
  return Support::yes();
}

// Every rank gives its whole channel data to the switch (S in all) and its reduced segment once
// more (S / p); two steps: the reduction, then the multicast.
CostSheet cost_nvls(const Layout& l, const CollectiveArgs& a, const Tuning&) {
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (a.count == 0) return cs;
  const double p = l.ranks, S = static_cast<double>(a.count * size_of(a.dtype));
  cs.steps = 2;
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(S + S / p));
  return cs;
}

}  // namespace

Algorithm nvls_allreduce() {
  return {"nvls",
          "NCCL's NVLS in one NVLink domain: the NVSwitch reduces each rank's segment (multimem.ld_reduce) and "
          "multicasts it back, pipelined",
          Collective::AllReduce,
          supports_nvls,
          cost_nvls,
          make_nvls};
}

}  // namespace topocoll::algo
