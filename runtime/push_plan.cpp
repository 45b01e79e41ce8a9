#include "runtime/push_plan.hpp"

#include <iterator>
#include <map>
#include <utility>

#include "algorithms/ir/program_index.hpp"

namespace topocoll::runtime {

using algo::Chunk;
using algo::Op;
using algo::OpKind;

namespace {

// A chunk where it lives (elements): as written, or where in-place aliasing puts it.
struct Region {
  algo::BufferId buffer = algo::BufferId::Output;
  std::uint64_t begin = 0, end = 0;
  bool operator==(const Region&) const = default;
};

Region where(const algo::CollectiveArgs& a, int rank, const Chunk& c, bool in_place) {
  if (!in_place) return {c.buffer, c.offset, c.end()};
  const algo::Storage st = algo::in_place_storage(a, rank, c);
  return {st.buffer, st.offset, st.offset + c.count};
}

// Whether op `o` of `rank` reads or writes any element of `r` (a recv_reduce reads its dst too).
bool touches(const algo::CollectiveArgs& a, int rank, const Op& o, const Region& r, bool in_place) {
  auto hit = [&](const Chunk& c) {
    if (c.count == 0) return false;
    const Region x = where(a, rank, c, in_place);
    return x.buffer == r.buffer && x.begin < r.end && r.begin < x.end;
  };
  return (algo::reads_src(o.kind) && hit(o.src)) || (algo::writes_dst(o.kind) && hit(o.dst));
}

}  // namespace

std::vector<PushTarget> push_targets(const algo::Schedule& s, int rank, bool in_place) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t elem = algo::size_of(a.dtype);
  algo::ProgramIndex me(s, rank);
  std::vector<PushTarget> out(me.size());
  std::map<int, algo::ProgramIndex> peers;  // the candidates' receivers, built on first use

  for (int c = 0; c < me.num_channels(); ++c) {
    const auto ops = me.channel(c);
    // This rank's receives on channel c, per peer, by position (FIFO number -> position).
    std::map<int, std::vector<std::uint32_t>> recv_pos;
    std::map<int, std::uint32_t> sends;  // sends to each peer so far on channel c
    for (std::uint32_t pos = 0; pos < ops.size(); ++pos) {
      const Op& o = me.op(ops[pos]);
      if (algo::is_receive(o.kind)) recv_pos[o.peer].push_back(pos);
    }
    // Walk the channel keeping the live results: the destinations of reducing receives that no
    // later op of the channel has written since (non-overlapping, keyed by (buffer, begin)). A
    // send of exactly a live result is a candidate, fused into the receive that computed it.
    std::map<std::pair<int, std::uint64_t>, std::pair<std::uint64_t, std::uint32_t>> live;  // -> (end, pos)
    for (std::uint32_t pos = 0; pos < ops.size(); ++pos) {
      const Op& o = me.op(ops[pos]);
      if (algo::writes_dst(o.kind) && o.dst.count > 0) {
        const Region w = where(a, rank, o.dst, in_place);
        const int b = static_cast<int>(w.buffer);
        auto it = live.lower_bound({b, w.begin});
        if (it != live.begin() && std::prev(it)->first.first == b && std::prev(it)->second.first > w.begin) --it;
        while (it != live.end() && it->first.first == b && it->first.second < w.end) it = live.erase(it);
        if (o.kind == OpKind::RecvReduce || o.kind == OpKind::RecvReduceCopy) live[{b, w.begin}] = {w.end, pos};
        continue;
      }
      if (o.kind != OpKind::Send) continue;
      const std::uint32_t number = sends[o.peer]++;  // its FIFO number on (rank -> peer, c)
      if (o.src.count == 0) continue;
      const Region d = where(a, rank, o.src, in_place);
      const auto hit = live.find({static_cast<int>(d.buffer), d.begin});
      if (hit == live.end() || hit->second.first != d.end) continue;
      const std::uint32_t fuse = hit->second.second;
      // No op of this rank on another channel writes the result.
      bool mine_ok = true;
      for (int k = 0; k < me.num_channels() && mine_ok; ++k)
        if (k != c)
          for (const std::uint32_t i : me.channel(k)) {
            const Op& x = me.op(i);
            if (algo::writes_dst(x.kind) && x.dst.count > 0) {
              const Region w = where(a, rank, x.dst, in_place);
              if (w.buffer == d.buffer && w.begin < d.end && d.begin < w.end) {
                mine_ok = false;
                break;
              }
            }
          }
      if (!mine_ok) continue;
      // The matching receive: the peer's `number`-th receive from this rank on channel c.
      auto it = peers.find(o.peer);
      if (it == peers.end()) it = peers.try_emplace(o.peer, s, o.peer).first;
      const algo::ProgramIndex& peer = it->second;
      if (c >= peer.num_channels()) continue;
      const auto theirs = peer.channel(c);
      std::uint32_t q = 0, seen = 0;
      for (; q < theirs.size(); ++q) {
        const Op& r = peer.op(theirs[q]);
        if (algo::is_receive(r.kind) && r.peer == rank && seen++ == number) break;
      }
      if (q == theirs.size()) continue;  // unmatched: the verifier's business, not a push
      const Op& recv = peer.op(theirs[q]);
      if (recv.kind != OpKind::Recv || recv.dst.count == 0) continue;
      const Region target = where(a, o.peer, recv.dst, in_place);

      bool ok = true;
      // No op of the peer on another channel touches the target.
      for (int k = 0; k < peer.num_channels() && ok; ++k) {
        if (k == c) continue;
        for (const std::uint32_t i : peer.channel(k))
          if (touches(a, o.peer, peer.op(i), target, in_place)) {
            ok = false;
            break;
          }
      }
      // On channel c, before the receive: local ops and receives are gated; sends only to this
      // rank, received by the time of the fused receive (issued, then: no gate needed, and none
      // wanted: the peer publishes its progress after a run of ops, later than the message).
      std::uint32_t gate = 0, to_me = 0;
      for (std::uint32_t i = 0; i < q && ok; ++i) {
        const Op& x = peer.op(theirs[i]);
        const bool mine = x.kind == OpKind::Send && x.peer == rank;
        const std::uint32_t my_number = mine ? to_me++ : 0;
        if (!touches(a, o.peer, x, target, in_place)) continue;
        if (x.is_switch()) {
          ok = false;
        } else if (x.kind == OpKind::Send) {
          const auto rp = recv_pos.find(o.peer);
          if (!mine || rp == recv_pos.end() || my_number >= rp->second.size()) {
            ok = false;
          } else {
            const std::uint32_t at = rp->second[my_number];
            ok = at < fuse || (at == fuse && where(a, o.peer, x.src, in_place) == target);
          }
          continue;
        }
        gate = i + 1;
      }
      if (!ok) continue;
      PushTarget& t = out[ops[pos]];
      t.ok = true;
      t.fuse = ops[fuse];
      t.buffer = static_cast<std::uint8_t>(target.buffer);
      t.offset = static_cast<std::size_t>(target.begin) * elem;
      t.gate = gate;
    }
  }
  return out;
}

}  // namespace topocoll::runtime
