"""Generators written in Python with the ScheduleBuilder, as examples (docs/python.md).

ring_allreduce: NCCL's flat ring allreduce written in Python, op by op, as algorithms/generators/ring.cpp
writes it: per channel, copy the input to the output, then a reduce-scatter and an allgather
over a ring that visits the nodes in order (each node's GPUs rotated by the channel), each step
cut into slices with the sends `pipeline_depth` slices ahead of the receives."""
import topocoll as tc


def ring_allreduce(layout, args, tuning):
    p, K = layout.ranks, tuning.channels
    b = tc.ScheduleBuilder("python-ring", args, channels=K)
    se = max(1, tuning.slice_bytes // args.element_size)
    window = max(1, tuning.pipeline_depth)
    for rank in range(p):
        for c in range(K):
            mine = tc.split(0, args.count, K, c)
            b.copy(rank, tc.Chunk("input", *mine), tc.Chunk("output", *mine), c)
            ring = [r for node in layout.node_ranks for r in node[c % len(node):] + node[:c % len(node)]]
            pos = ring.index(rank)
            nxt, prv = ring[(pos + 1) % p], ring[(pos - 1) % p]
            seg = [tc.Chunk("output", *tc.split(*mine, p, i)) for i in range(p)]

            def step(out, inc, reduce):
                so, si = tc.slices(out, se), tc.slices(inc, se)
                for k in range(max(len(so), len(si) + window)):
                    if k < len(so):
                        b.send(rank, nxt, so[k], c)
                    if window <= k < len(si) + window:
                        (b.recv_reduce if reduce else b.recv)(rank, prv, si[k - window], c)

            for s in range(p - 1):  # reduce-scatter: segment pos-s-1 out, pos-s-2 in
                step(seg[(pos - s - 1) % p], seg[(pos - s - 2) % p], True)
            for s in range(p - 1):  # allgather: forward segment pos-s, receive pos-s-1
                step(seg[(pos - s) % p], seg[(pos - s - 1) % p], False)
    return b
