# %% [markdown]
# # topocoll from Python: ring, double binary tree and a ring written in Python
#
# Notebook-style (`# %%` cells: VS Code, Jupyter's jupytext, or plain `python3 example.py`).
# Loads N DGX H100 nodes, registers the Python ring of topocoll.examples as an algorithm, proves
# each schedule with the verifier and simulates allreduce from 1 MiB to 1 GiB with the analytic
# engine. Runs in seconds; `ctest -R python_test` runs it. docs/python.md explains the API.

# %%
import os

import topocoll as tc
from topocoll.examples import ring_allreduce

NODES = int(os.environ.get("NODES", "4"))
topology = tc.load_topology("dgx-h100", nodes=NODES, fabric="rail-fat-tree")
print(topology)

# %% A generator written in Python, registered beside the built-in ones
tc.register("python-ring", ring_allreduce, description="NCCL's flat ring, written in Python")
for a in tc.algorithms("allreduce"):
    print(f"{a['name']:>34} [{a['origin']}] {a['description'][:70]}")

# %% Prove each schedule at one size before simulating it
names = ["ring", "dbt", "python-ring"]
tuning = tc.Tuning(channels=8)
args = tc.nccl_tests_args("allreduce", 64 << 20, "float32", "sum", topology.num_ranks)
for name in names:
    v = tc.verify(tc.generate(name, topology, args, tuning), topology)
    print(f"{name:>12}: {'verified' if v['ok'] else 'REFUSED: ' + v['message']}, {v['steps']} steps, "
          f"{v['max_inter_bytes_sent']} B per rank to other nodes")

# %% Simulate: one record per (algorithm, size), as plain dicts
sizes = [1 << s for s in range(20, 31, 2)]
records = tc.sweep(topology, names, sizes, tuning=tuning)

# %% As a table (a pandas DataFrame when pandas is installed)
try:
    df = tc.to_dataframe(records)
    table = df.pivot(index="size_bytes", columns="algorithm", values="busbw_gbps")
    print("busbw (GB/s) by size:")
    print(table.to_string(float_format=lambda x: f"{x:8.1f}"))
except ImportError:
    print(f"{'size':>12} {'algorithm':>12} {'time(us)':>10} {'busbw':>8}")
    for r in records:
        print(f"{r['size_bytes']:>12} {r['algorithm']:>12} {r['time_us']:>10.1f} {r['busbw_gbps']:>8.1f}")

# %% The Python ring is the C++ ring: same simulated time at every size
by = {(r["algorithm"], r["size_bytes"]): r["time_us"] for r in records}
same = all(by[("python-ring", s)] == by[("ring", s)] for s in sizes)
print(f"python-ring == ring at every size: {same}")
assert same
