"""Shared fixtures of the Python package's tests (pytest; `ctest -R python_test`)."""
import pytest

import topocoll as tc


@pytest.fixture(scope="session")
def h100():
    """One DGX H100 node: 8 GPUs on NVSwitch."""
    return tc.load_topology("dgx-h100")


@pytest.fixture(scope="session")
def h100x2():
    """Two DGX H100 nodes on a rail-optimised fat tree: 16 ranks."""
    return tc.load_topology("dgx-h100", nodes=2, fabric="rail-fat-tree")
