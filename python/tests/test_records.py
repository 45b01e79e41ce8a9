import pytest

import topocoll as tc


def test_simulated_record_is_a_plain_dict(h100x2):
    s = tc.generate("dbt", h100x2, tc.nccl_tests_args("allreduce", 8 << 20, "float32", "sum", 16))
    r = tc.simulate(h100x2, s)
    assert type(r) is dict
    assert r["kind"] == "simulated" and r["engine"] == "analytic" and r["algorithm"] == "dbt"
    assert r["topology"] == "dgx-h100" and r["nodes"] == 2 and r["ranks"] == 16
    assert r["size_bytes"] == 8 << 20 and r["dtype"] == "float" and r["collective"] == "allreduce"
    assert r["protocol"] in ("LL", "LL128", "Simple")
    # nccl-tests' definitions: algbw = size / time, busbw = algbw x 2(p-1)/p.
    assert r["algbw_gbps"] == pytest.approx(r["size_bytes"] / (r["time_us"] * 1e3), rel=1e-6)
    assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 2 * 15 / 16, rel=1e-6)


def test_one_protocol_when_asked(h100):
    s = tc.generate("ring", h100, tc.nccl_tests_args("allreduce", 1 << 20, "float32", "sum", 8))
    assert tc.simulate(h100, s, protocol="LL")["protocol"] == "LL"
    assert tc.simulate(h100, s, protocol="Simple")["protocol"] == "Simple"


def test_records_as_a_dataframe(h100):
    pd = pytest.importorskip("pandas")
    recs = tc.sweep(h100, "ring,dbt", [1 << 10, 1 << 20, 1 << 26])
    df = tc.to_dataframe(recs)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 6
    assert {"algorithm", "size_bytes", "time_us", "busbw_gbps", "protocol"} <= set(df.columns)
    assert sorted(df["algorithm"].unique()) == ["dbt", "ring"]
    big = df[df["size_bytes"] == 1 << 26]
    assert (big["busbw_gbps"] > 0).all()
