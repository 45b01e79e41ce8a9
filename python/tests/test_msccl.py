"""MSCCL XML from Python, where the library has it (topocoll.HAVE_MSCCL)."""
import pytest

import topocoll as tc


def ring(topology):
    return tc.generate("ring", topology, tc.nccl_tests_args("allreduce", 1 << 20, "float32", "sum", 8))


def test_without_msccl_the_functions_say_so(h100):
    if tc.HAVE_MSCCL:
        pytest.skip("this build has MSCCL XML interchange")
    with pytest.raises(NotImplementedError, match="write_msccl_xml: .*no MSCCL XML"):
        tc.write_msccl_xml(ring(h100))


@pytest.mark.skipif(not tc.HAVE_MSCCL, reason="this build has no MSCCL XML interchange (algorithms/ir/msccl_xml.hpp)")
def test_msccl_round_trip_keeps_verification_and_time(h100):
    s = ring(h100)
    xml = tc.write_msccl_xml(s)
    assert xml.lstrip().startswith("<")
    g = tc.msccl_granularity(xml)
    assert s.args.count % g == 0
    back = tc.read_msccl_xml(xml, s.args.count, "ring.xml")
    assert back.num_ranks == 8 and back.args.collective == "allreduce"
    assert tc.verify(back, h100)["ok"]
    assert tc.simulate(h100, back)["time_us"] == pytest.approx(tc.simulate(h100, s)["time_us"])


@pytest.mark.skipif(not tc.HAVE_MSCCL, reason="this build has no MSCCL XML interchange (algorithms/ir/msccl_xml.hpp)")
def test_malformed_msccl_xml_names_the_source():
    with pytest.raises(tc.InputError, match="broken.xml"):
        tc.read_msccl_xml("<algo name='x' ngpus='2'><gpu", 8, "broken.xml")
