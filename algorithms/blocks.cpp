#include "algorithms/blocks.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/errors.hpp"

namespace topocoll::algo {

std::uint64_t slice_count(std::uint64_t count, std::uint64_t slice_elems) {
  if (count == 0) return 0;
  slice_elems = std::max<std::uint64_t>(slice_elems, 1);
  return (count + slice_elems - 1) / slice_elems;
}

Chunk slice(const Chunk& c, std::uint64_t slices, std::uint64_t k) {
  const Range r = split(Range{c.offset, c.count}, slices, k);
  return Chunk{c.buffer, r.offset, r.count};
}

std::uint64_t slice_elems(const CollectiveArgs& a, const Tuning& t) {
  return std::max<std::uint64_t>(1, t.slice_bytes / size_of(a.dtype));
}

std::uint64_t tree_slice_elems(const CollectiveArgs& a, const Tuning& t, std::uint64_t count) {
  const std::uint64_t elem = size_of(a.dtype);
  const std::uint64_t floor = std::max<std::uint64_t>(1, kTreeMinSliceBytes / elem);
  return std::min(slice_elems(a, t), std::max(floor, count / kTreeMinSlices));
}

namespace {
int wrap(int i, int n) {
  return ((i % n) + n) % n;
}
}  // namespace

// One ring step: the sends of `out`'s slices run `window` ahead of the receives of `in`'s.
// A send at step s carries what the receive of the same slice produced at step s-1, which
// program order already put before it, so any window keeps the data dependencies.
// With `in_own`, a reducing step reduces into `in` from there: recv_reduce_copy(in_own -> in).
void ring_step(ProgramBuilder& b, int next, int prev, const Chunk& out, const Chunk& in, bool reduce, int channel,
               std::uint64_t slice_elems, int window, const Chunk* in_own = nullptr) {
  const std::uint64_t so = slice_count(out.count, slice_elems), si = slice_count(in.count, slice_elems);
  const std::uint64_t w = static_cast<std::uint64_t>(std::max(window, 0));
  for (std::uint64_t k = 0; k < std::max(so, si + w); ++k) {
    if (k < so) b.send(next, slice(out, so, k), channel);
    if (k >= w && k - w < si) {
      if (reduce && in_own != nullptr)
        b.recv_reduce_copy(prev, slice(*in_own, si, k - w), slice(in, si, k - w), channel);
      else if (reduce)
        b.recv_reduce(prev, slice(in, si, k - w), channel);
      else
        b.recv(prev, slice(in, si, k - w), channel);
    }
  }
}

void ring_reduce_scatter(ProgramBuilder& b, std::span<const int> ring, int pos, const std::vector<Chunk>& segment,
                         int channel, std::uint64_t slice_elems, int window, const std::vector<Chunk>* own) {
  const int n = static_cast<int>(ring.size());
  TOPOCOLL_ASSERT(static_cast<int>(segment.size()) == n,
                  fmt::format("{} segments for a ring of {}", segment.size(), n));
  TOPOCOLL_ASSERT(own == nullptr || own->size() == segment.size(),
                  fmt::format("{} own segments for {}", own ? own->size() : 0, segment.size()));
  if (n == 1) {
    if (own != nullptr) b.copy((*own)[0], segment[0], channel);
    return;
  }
  const int next = ring[static_cast<std::size_t>(wrap(pos + 1, n))],
            prev = ring[static_cast<std::size_t>(wrap(pos - 1, n))];
  // Step s: send segment[pos-s-1] (partially reduced; at s = 0 the own contribution), reduce
  // segment[pos-s-2] from prev. Every segment but pos-1 is reduced once, so with `own` each is
  // reduced straight from there (pos-1 is overwritten by the allgather that follows).
  // Slices of a step go out in order so the next rank can start on slice 0 at once.
  for (int s = 0; s + 1 < n; ++s) {
    const auto out = static_cast<std::size_t>(wrap(pos - s - 1, n)),
               in = static_cast<std::size_t>(wrap(pos - s - 2, n));
    const Chunk& sent = own != nullptr && s == 0 ? (*own)[out] : segment[out];
    ring_step(b, next, prev, sent, segment[in], true, channel, slice_elems, window,
              own != nullptr ? &(*own)[in] : nullptr);
  }
}

void ring_allgather(ProgramBuilder& b, std::span<const int> ring, int pos, const std::vector<Chunk>& segment,
                    int channel, std::uint64_t slice_elems, int window) {
  const int n = static_cast<int>(ring.size());
  TOPOCOLL_ASSERT(static_cast<int>(segment.size()) == n,
                  fmt::format("{} segments for a ring of {}", segment.size(), n));
  if (n == 1) return;
  const int next = ring[static_cast<std::size_t>(wrap(pos + 1, n))],
            prev = ring[static_cast<std::size_t>(wrap(pos - 1, n))];
  // Step s: forward segment[pos-s] (own at s = 0, received at step s-1), receive segment[pos-s-1].
  for (int s = 0; s + 1 < n; ++s)
    ring_step(b, next, prev, segment[static_cast<std::size_t>(wrap(pos - s, n))],
              segment[static_cast<std::size_t>(wrap(pos - s - 1, n))], false, channel, slice_elems, window);
}

void pairwise_exchange(ProgramBuilder& b, int peer, const Chunk& data, bool reduce, int channel,
                       std::uint64_t slice_elems, int window, const Chunk* own) {
  ring_step(b, peer, peer, own != nullptr ? *own : data, data, reduce, channel, slice_elems, window, own);
}

namespace {

// With `own` (the slice's own contribution, when not in s already): the first child's part is
// reduced from there (recv_reduce_copy), a leaf sends it up as it is, a lone rank copies it.
void reduce_slice(ProgramBuilder& b, const TreeLinks& links, const Chunk& s, int channel, const Chunk* own) {
  const bool from_own = own != nullptr && !(*own == s);
  for (std::size_t i = 0; i < links.children.size(); ++i) {
    if (i == 0 && from_own)
      b.recv_reduce_copy(links.children[i], *own, s, channel);
    else
      b.recv_reduce(links.children[i], s, channel);
  }
  const bool leaf = links.children.empty();
  if (links.parent >= 0) b.send(links.parent, leaf && from_own ? *own : s, channel);
  if (leaf && links.parent < 0 && from_own) b.copy(*own, s, channel);
}

void broadcast_slice(ProgramBuilder& b, const TreeLinks& links, const Chunk& s, int channel) {
  if (links.parent >= 0) b.recv(links.parent, s, channel);
  for (int child : links.children) b.send(child, s, channel);
}

}  // namespace

void tree_reduce(ProgramBuilder& b, const TreeLinks& links, const Chunk& data, int channel, std::uint64_t slice_elems,
                 const Chunk* own) {
  TOPOCOLL_ASSERT(own == nullptr || own->count == data.count,
                  fmt::format("own contribution of {} elements for {}", own ? own->count : 0, data.count));
  const std::uint64_t n = slice_count(data.count, slice_elems);
  for (std::uint64_t k = 0; k < n; ++k) {
    const Chunk mine = own != nullptr ? slice(*own, n, k) : Chunk{};
    reduce_slice(b, links, slice(data, n, k), channel, own != nullptr ? &mine : nullptr);
  }
}

void tree_broadcast(ProgramBuilder& b, const TreeLinks& links, const Chunk& data, int channel,
                    std::uint64_t slice_elems) {
  const std::uint64_t n = slice_count(data.count, slice_elems);
  for (std::uint64_t k = 0; k < n; ++k) broadcast_slice(b, links, slice(data, n, k), channel);
}

void tree_allreduce(ProgramBuilder& b, const TreeLinks& links, const Chunk& data, int channel,
                    std::uint64_t slice_elems, const Chunk* own) {
  tree_reduce(b, links, data, channel, slice_elems, own);
  tree_broadcast(b, links, data, channel, slice_elems);
}

}  // namespace topocoll::algo
