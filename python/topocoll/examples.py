"""Generators written in Python with the ScheduleBuilder, as examples (docs/python.md).

ring_allreduce: NCCL's flat ring allreduce written in Python, op by op, as algorithms/generators/ring.cpp
writes it: per channel a reduce-scatter and an allgather over a ring that visits the nodes in
order (each node's GPUs rotated by the channel), each step cut into slices with the sends
`pipeline_depth` slices ahead of the receives. The input is read where it is: the first step
sends the own segment from the input and every reduction is a recv_reduce_copy from the input
segment into the output one (NCCL's recvReduceCopy), so nothing copies the input first."""
import topocoll as tc


def ring_allreduce(layout, args, tuning):
    p, K = layout.ranks, tuning.channels
    b = tc.ScheduleBuilder("python-ring", args, channels=K)
    se = max(1, tuning.slice_bytes // args.element_size)
    window = max(1, tuning.pipeline_depth)
    for rank in range(p):
        for c in range(K):
            mine = tc.split(0, args.count, K, c)
            if p == 1:
                if mine[1] > 0:
                    b.copy(rank, tc.Chunk("input", *mine), tc.Chunk("output", *mine), c)
                continue
            ring = [r for node in layout.node_ranks for r in node[c % len(node):] + node[:c % len(node)]]
            pos = ring.index(rank)
            nxt, prv = ring[(pos + 1) % p], ring[(pos - 1) % p]
            seg = [tc.Chunk("output", *tc.split(*mine, p, i)) for i in range(p)]
            own = [tc.Chunk("input", *tc.split(*mine, p, i)) for i in range(p)]

            def step(out, inc, reduce_from=None):
                so, si = tc.slices(out, se), tc.slices(inc, se)
                src = tc.slices(reduce_from, se) if reduce_from is not None else None
                for k in range(max(len(so), len(si) + window)):
                    if k < len(so):
                        b.send(rank, nxt, so[k], c)
                    if window <= k < len(si) + window:
                        if src is not None:
                            b.recv_reduce_copy(rank, prv, src[k - window], si[k - window], c)
                        else:
                            b.recv(rank, prv, si[k - window], c)

            for s in range(p - 1):  # reduce-scatter: segment pos-s-1 out (at s = 0 from the input), pos-s-2 in
                out, inc = (pos - s - 1) % p, (pos - s - 2) % p
                step(own[out] if s == 0 else seg[out], seg[inc], reduce_from=own[inc])
            for s in range(p - 1):  # allgather: forward segment pos-s, receive pos-s-1
                step(seg[(pos - s) % p], seg[(pos - s - 1) % p])
    return b
