"""A generator written in Python is as good as a built-in one: the ring of topocoll/examples.py, registered,
verifies and simulates to the same time as the C++ `ring` (same channels, protocols, topology),
through the same simulate path (simulator/sweep.hpp simulate_point)."""
import pytest

import topocoll as tc
from topocoll.examples import ring_allreduce

SIZE = 64 << 20  # large enough that the device time is above the per-call host floor


@pytest.fixture(scope="module", autouse=True)
def python_ring():
    tc.register("python-ring", ring_allreduce, description="NCCL's flat ring, written in Python")
    yield
    tc.unregister("python-ring")


def both(topology, size=SIZE, tuning=None):
    args = tc.nccl_tests_args("allreduce", size, "float32", "sum", topology.num_ranks)
    return (tc.generate("python-ring", topology, args, tuning), tc.generate("ring", topology, args, tuning))


def test_registered_python_generator_is_listed():
    entry = [a for a in tc.algorithms() if a["name"] == "python-ring"]
    assert entry == [{"name": "python-ring", "description": "NCCL's flat ring, written in Python",
                      "collective": "allreduce", "origin": "python"}]


@pytest.mark.parametrize("tuning", [tc.Tuning(), tc.Tuning(channels=3, slice_bytes=256 << 10, pipeline_depth=2)],
                         ids=["default", "3ch-256K-depth2"])
def test_python_ring_is_the_cpp_ring_op_for_op(h100x2, tuning):
    py, cpp = both(h100x2, 4 << 20, tuning)
    assert py.num_channels == cpp.num_channels == tuning.channels
    for rank in range(h100x2.num_ranks):
        assert py.program(rank) == cpp.program(rank), f"rank {rank}"


def test_python_ring_verifies(h100x2):
    py, cpp = both(h100x2)
    vp, vc = tc.verify(py, h100x2), tc.verify(cpp, h100x2)
    assert vp["ok"], vp["message"]
    for key in ("operations", "steps", "max_bytes_sent", "max_inter_bytes_sent"):
        assert vp[key] == vc[key], key


@pytest.mark.parametrize("engine,topology", [("analytic", "h100x2"), ("analytic", "h100"), ("simgrid", "h100"), ("simgrid", "h100x2")])
def test_python_ring_simulates_to_the_cpp_ring_time(engine, topology, request):
    t = request.getfixturevalue(topology)
    py, cpp = both(t)
    rp = tc.simulate(t, py, engine=engine)
    rc = tc.simulate(t, cpp, engine=engine)
    assert rp["engine"] == rc["engine"] == engine
    assert rp["algorithm"] == "python-ring" and rc["algorithm"] == "ring"
    assert rp["device_time_us"] > 100.0  # above the host floor: the schedule decides the time
    assert rp["device_time_us"] == rc["device_time_us"]
    assert rp["time_us"] == rc["time_us"] and rp["protocol"] == rc["protocol"]


def test_sweep_runs_python_and_builtin_side_by_side(h100):
    recs = tc.sweep(h100, ["ring", "python-ring"], [1 << 20, 16 << 20])
    assert [(r["algorithm"], r["size_bytes"]) for r in recs] == [
        ("ring", 1 << 20), ("ring", 16 << 20), ("python-ring", 1 << 20), ("python-ring", 16 << 20)]
    assert recs[0]["time_us"] == recs[2]["time_us"] and recs[1]["time_us"] == recs[3]["time_us"]


def test_a_broken_python_ring_is_caught_by_the_verifier(h100):
    args = tc.nccl_tests_args("allreduce", 1 << 20, "float32", "sum", 8)
    good = tc.generate("python-ring", h100, args)
    b = tc.ScheduleBuilder("broken", args, channels=good.num_channels)
    for rank in range(8):
        for op in good.program(rank):
            if not (rank == 3 and op.kind == "recv_reduce_copy"):  # rank 3 drops its reductions
                b.add(rank, op)
    v = tc.verify(b)
    assert not v["ok"]
    # Rank 3 then forwards output it never wrote.
    assert v["failure"] == "uninitialised read"
    assert v["message"].startswith("rank 3 ")
