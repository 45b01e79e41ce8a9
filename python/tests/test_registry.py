import pytest

import topocoll as tc

BUILTIN = [a for a in tc.algorithms() if a["origin"] == "c++"]


def call_of(alg, ranks):
    """nccl-tests' 1 MiB call of the algorithm's collective; None for a collective sized by a
    matrix (all-to-allv), which the Python CollectiveArgs does not carry."""
    try:
        return tc.nccl_tests_args(alg["collective"], 1 << 20, "float32", "sum", ranks)
    except tc.InputError as e:
        if "size matrix" in str(e):
            return None
        raise


def test_registry_lists_the_builtin_algorithms():
    names = [a["name"] for a in BUILTIN]
    for expected in ("ring", "dbt", "hierarchical"):
        assert expected in names
    assert all(a["description"] for a in BUILTIN)
    assert {a["collective"] for a in tc.algorithms("allreduce")} == {"allreduce"}


@pytest.mark.parametrize("alg", BUILTIN, ids=[a["name"] for a in BUILTIN])
def test_every_registered_algorithm_generates_and_verifies(alg, h100x2):
    # One size (nccl-tests' 1 MiB call) on 2 x DGX H100: what the registry says it supports
    # must verify; what it does not support says why.
    args = call_of(alg, h100x2.num_ranks)
    if args is None:
        pytest.skip(f"{alg['name']}: {alg['collective']} is sized by a matrix, not bound in Python")
    ok, reason = tc.supports(alg["name"], h100x2, args)
    if not ok:
        assert reason, f"{alg['name']}: unsupported without a reason"
        with pytest.raises(tc.InputError, match=alg["name"]):
            tc.generate(alg["name"], h100x2, args)
        return
    s = tc.generate(alg["name"], h100x2, args)
    assert s.num_ranks == 16 and s.args.collective == alg["collective"]
    v = tc.verify(s, h100x2)
    assert v["ok"], v["message"]
    assert v["failure"] == "OK" and v["operations"] > 0


def test_most_of_the_registry_runs_on_dgx_h100(h100x2):
    sized = [a for a in BUILTIN if call_of(a, 16) is not None]
    supported = [a["name"] for a in sized if tc.supports(a["name"], h100x2, call_of(a, 16))[0]]
    assert "ring" in supported and "dbt" in supported
    assert len(supported) >= len(sized) // 2


def test_cost_sheet_of_ring(h100x2):
    args = tc.CollectiveArgs("allreduce", 1 << 20, "float32", "sum", 16)
    c = tc.cost("ring", h100x2, args)
    assert c["steps"] == 2 * 15
    assert c["busbw_factor"] == pytest.approx(2 * 15 / 16)
