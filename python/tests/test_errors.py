"""Bad input and misuse: each gets one clear exception naming what was given."""
import pytest

import topocoll as tc


def args8(**kw):
    return tc.CollectiveArgs("allreduce", 1024, "float32", "sum", 8, **kw)


def test_unknown_algorithm_names_it_and_the_known_ones(h100):
    with pytest.raises(tc.InputError, match=r"unknown algorithm 'rign'.*ring") as e:
        tc.generate("rign", h100, args8())
    assert "\n" not in str(e.value)


def test_unknown_collective_dtype_op_engine_protocol(h100):
    with pytest.raises(tc.InputError, match="allreduse"):
        tc.CollectiveArgs("allreduse", 8)
    with pytest.raises(tc.InputError, match="float33"):
        tc.CollectiveArgs("allreduce", 8, "float33")
    with pytest.raises(tc.InputError, match="sumx"):
        tc.CollectiveArgs("allreduce", 8, "float32", "sumx")
    s = tc.generate("ring", h100, args8())
    with pytest.raises(tc.InputError, match="warp-drive"):
        tc.simulate(h100, s, engine="warp-drive")
    with pytest.raises(tc.InputError, match="LL256"):
        tc.simulate(h100, s, protocol="LL256")


def test_wrong_types_are_type_errors(h100):
    with pytest.raises(TypeError):
        tc.load_topology(42)
    with pytest.raises(TypeError):
        tc.generate("ring", h100, "allreduce")
    with pytest.raises(TypeError):
        tc.simulate("dgx-h100", tc.generate("ring", h100, args8()))
    with pytest.raises(TypeError):
        tc.ScheduleBuilder("x", args8()).send(0, 1, ("output", 0, 8))


def test_bad_rank_channel_buffer_in_the_builder():
    b = tc.ScheduleBuilder("x", args8(), channels=2)
    with pytest.raises(tc.InputError, match=r"rank 8: expected 0\.\.7"):
        b.send(8, 1, tc.Chunk("output", 0, 8))
    with pytest.raises(tc.InputError, match=r"rank -1"):
        b.copy(-1, tc.Chunk("input", 0, 8), tc.Chunk("output", 0, 8))
    with pytest.raises(tc.InputError, match="channel -2"):
        b.recv(0, 1, tc.Chunk("output", 0, 8), -2)
    with pytest.raises(tc.InputError, match="buffer 'outptu'"):
        tc.Chunk("outptu", 0, 8)
    with pytest.raises(tc.InputError, match="channel 5"):
        b.set_pattern(5, "tree")
    with pytest.raises(tc.InputError, match="root 9"):
        args8(root=9)
    with pytest.raises(tc.InputError, match="rank 12"):
        tc.generate("ring", tc.uniform_layout(1, 8), args8()).program(12)


def test_schedule_for_another_job_is_refused(h100x2, h100):
    s = tc.generate("ring", h100, args8())
    with pytest.raises(tc.InputError, match="8 ranks.*16 GPUs"):
        tc.simulate(h100x2, s)
    with pytest.raises(tc.InputError, match="layout has 16 ranks"):
        tc.generate("ring", h100x2, args8())


def test_collective_mismatch(h100):
    ag = tc.CollectiveArgs("allgather", 1024, "float32", "sum", 8)
    with pytest.raises(tc.InputError, match="allreduce algorithm"):
        tc.generate("ring", h100, ag)


def test_registering_twice_or_over_a_builtin():
    with pytest.raises(tc.InputError, match="'ring': already registered"):
        tc.register("ring", lambda l, a, t: None, description="shadow")
    with pytest.raises(TypeError, match="callable"):
        tc.register("not-callable", 3, description="x")
    with pytest.raises(tc.InputError, match="'never-registered'"):
        tc.unregister("never-registered")


def test_python_generator_returning_garbage(h100):
    @tc.generator("returns-none", description="a broken generator")
    def broken(layout, args, tuning):
        return None
    try:
        with pytest.raises(TypeError, match="returns-none.*NoneType"):
            tc.generate("returns-none", h100, args8())
    finally:
        tc.unregister("returns-none")


def test_verifier_reports_a_broken_schedule_as_a_value_not_an_exception():
    b = tc.ScheduleBuilder("lonely-send", args8(), channels=1)
    b.send(0, 1, tc.Chunk("output", 0, 8))
    v = tc.verify(b)
    assert not v["ok"] and v["failure"] != "OK"
    assert "rank" in v["message"]


def test_split_refuses_an_impossible_piece():
    with pytest.raises(tc.InputError, match="piece 4 of 4"):
        tc.split(0, 100, 4, 4)
    assert [tc.split(0, 10, 4, i) for i in range(4)] == [(0, 3), (3, 3), (6, 2), (8, 2)]


def test_dataframe_without_pandas_says_so(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match="pandas"):
        tc.to_dataframe([{"a": 1}])
