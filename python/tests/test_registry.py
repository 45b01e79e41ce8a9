import pytest

import topocoll as tc

BUILTIN = [a for a in tc.algorithms() if a["origin"] == "c++"]


def call_of(alg, ranks):
    """nccl-tests' 1 MiB call of the algorithm's collective; for all-to-allv (sized by a matrix) a
    skewed matrix of about the same bytes, with empty blocks."""
    if alg["collective"] == "alltoallv":
        block = (1 << 20) // 4 // ranks
        sizes = [[block * ((i + 2 * j + 1) % 4) // 2 for j in range(ranks)] for i in range(ranks)]
        return tc.CollectiveArgs("alltoallv", dtype="float32", sizes=sizes)
    return tc.nccl_tests_args(alg["collective"], 1 << 20, "float32", "sum", ranks)


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
    supported = [a["name"] for a in BUILTIN if tc.supports(a["name"], h100x2, call_of(a, 16))[0]]
    assert "ring" in supported and "dbt" in supported and "alltoallv-pairwise" in supported
    assert len(supported) >= len(BUILTIN) // 2


def test_alltoallv_args_carry_the_matrix():
    a = tc.CollectiveArgs("alltoallv", sizes=[[1, 2, 3], [4, 0, 6], [7, 8, 9]])
    assert a.ranks == 3 and a.sizes[1] == [4, 0, 6]
    assert a.input_count == 24 and a.output_count == 18 and a.defined_output_count(1) == 10
    assert tc.CollectiveArgs("allreduce", 8).sizes is None
    with pytest.raises(tc.InputError, match="expected sizes="):
        tc.CollectiveArgs("alltoallv", 8, ranks=3)
    with pytest.raises(tc.InputError, match=r"sizes\[1\]: 2 counts in the row, expected 3"):
        tc.CollectiveArgs("alltoallv", sizes=[[1, 2, 3], [4, 0], [7, 8, 9]])
    with pytest.raises(tc.InputError, match="a size matrix is for alltoallv, not allreduce"):
        tc.CollectiveArgs("allreduce", 8, sizes=[[1]])
    with pytest.raises(tc.InputError, match="the size matrix is for 3 ranks"):
        tc.CollectiveArgs("alltoallv", ranks=4, sizes=[[1, 2, 3], [4, 0, 6], [7, 8, 9]])


def test_cost_sheet_of_ring(h100x2):
    args = tc.CollectiveArgs("allreduce", 1 << 20, "float32", "sum", 16)
    c = tc.cost("ring", h100x2, args)
    assert c["steps"] == 2 * 15
    assert c["busbw_factor"] == pytest.approx(2 * 15 / 16)
