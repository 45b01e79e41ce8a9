import pytest

import topocoll as tc


def ring(topology, size=1 << 20):
    return tc.generate("ring", topology, tc.nccl_tests_args("allreduce", size, "float32", "sum", topology.num_ranks))


def test_json_round_trip_keeps_programs_verification_and_time(h100, tmp_path):
    s = ring(h100)
    path = tmp_path / "ring.json"
    tc.save_schedule(s, str(path))
    back = tc.load_schedule(str(path))
    assert back.name == s.name and back.num_channels == s.num_channels
    assert back.args.count == s.args.count and back.args.collective == "allreduce"
    for rank in range(8):
        assert back.program(rank) == s.program(rank)
    assert tc.verify(back)["ok"]
    assert tc.simulate(h100, back)["time_us"] == tc.simulate(h100, s)["time_us"]


def test_text_round_trip(h100):
    s = ring(h100)
    text = tc.write_schedule(s)
    assert '"format": "topocoll-schedule"' in text or '"format":"topocoll-schedule"' in text
    assert tc.write_schedule(tc.read_schedule(text)) == text


def test_malformed_json_file_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "topocoll-schedule", "version": 1, "name": ')
    with pytest.raises(tc.InputError, match="broken.json"):
        tc.load_schedule(str(path))


def test_wrong_field_names_the_field():
    with pytest.raises(tc.InputError, match="ranks"):
        tc.read_schedule('{"format": "topocoll-schedule", "version": 1, "name": "x", "collective": "allreduce",'
                         ' "count": 8, "dtype": "float32", "op": "sum", "ranks": -3, "channels": 1,'
                         ' "scratch_count": 0, "programs": []}', "inline.json")


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(tc.InputError, match="nowhere.json"):
        tc.load_schedule(str(tmp_path / "nowhere.json"))


def test_schedule_file_as_the_commands_take_it(h100, tmp_path):
    s = ring(h100)
    path = tmp_path / "ring.json"
    tc.save_schedule(s, str(path))
    f = tc.load_schedule_file(str(path))
    assert f.format == "topocoll-schedule JSON" and f.name == "ring" and f.collective == "allreduce"
    assert f.ranks == 8 and f.count == s.args.count and "ring.json" in f.describe()
    again = f.schedule()
    assert all(again.program(r) == s.program(r) for r in range(8))
    with pytest.raises(tc.InputError, match=rf"count 7: .*ring.json is written for count {s.args.count} only"):
        f.schedule(7)


def test_not_a_schedule_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(tc.InputError, match="notes.txt: not a schedule file"):
        tc.load_schedule_file(str(path))
