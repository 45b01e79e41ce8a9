import pytest

import topocoll as tc


def test_preset_loads_with_its_nodes_and_ranks(h100x2):
    assert h100x2.nodes == 2
    assert h100x2.num_ranks == 16
    assert h100x2.fabric == "rail-fat-tree"
    layout = h100x2.layout
    assert layout.ranks == 16 and layout.nodes == 2
    assert layout.node_of == [0] * 8 + [1] * 8
    assert sorted(layout.node_ranks[1]) == list(range(8, 16))
    assert "16 ranks" in repr(h100x2)


def test_one_node_has_no_fabric(h100):
    assert h100.nodes == 1 and h100.num_ranks == 8
    assert h100.fabric is None


def test_file_topology_loads(tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("node: dgx-a100\nnodes: 3\nfabric: fat-tree\n")
    t = tc.load_topology(str(spec))
    assert t.nodes == 3 and t.num_ranks == 24 and t.fabric == "fat-tree"


def test_unknown_topology_names_what_was_given():
    with pytest.raises(tc.InputError, match="no-such-cluster"):
        tc.load_topology("no-such-cluster")


def test_input_error_is_a_value_error():
    with pytest.raises(ValueError):
        tc.load_topology("dgx-h100", nodes=0)


def test_unknown_fabric_is_refused():
    with pytest.raises(tc.InputError, match="torus"):
        tc.load_topology("dgx-h100", nodes=2, fabric="torus")


def test_uniform_layout_without_a_topology():
    l = tc.uniform_layout(2, 4)
    assert l.ranks == 8 and l.node_ranks == [[0, 1, 2, 3], [4, 5, 6, 7]]
