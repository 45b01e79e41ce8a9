"""topocoll from Python: topologies, the algorithm registry, schedules built op by op, the
verifier, the simulator (analytic and SimGrid engines) and schedule interchange.

The C++ library does the work (topocoll._topocoll, python/src/module.cpp); this layer adds
generators written in Python (`register`, `@generator`), plain-dict records and a pandas
DataFrame of them. docs/python.md is the reference by example.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable, Optional, Union

from . import _topocoll
from ._topocoll import (
    Chunk,
    CollectiveArgs,
    Error,
    InputError,
    InternalError,
    Layout,
    Op,
    Schedule,
    ScheduleBuilder,
    ScheduleError,
    ScheduleFile,
    Topology,
    Tuning,
    load_schedule_file,
    load_topology,
    nccl_tests_args,
    uniform_layout,
)

__all__ = [
    "Chunk", "CollectiveArgs", "Error", "HAVE_MSCCL", "InputError", "InternalError", "Layout", "Op", "Schedule",
    "ScheduleBuilder", "ScheduleError", "ScheduleFile", "Topology", "Tuning", "algorithms", "cost", "generate",
    "generator", "load_schedule", "load_schedule_file", "load_topology", "nccl_tests_args", "read_schedule", "register",
    "msccl_granularity", "read_msccl_xml", "save_schedule", "simulate", "slices", "split", "supports", "sweep", "to_dataframe",
    "uniform_layout", "unregister", "verify", "write_msccl_xml", "write_schedule",
]

__version__ = "0.1.0"

# ---------------------------------------------------------------------------------------------
# Pure helpers for generators: the same arithmetic as algorithms/ir/types.hpp and blocks.hpp.


def split(offset: int, count: int, parts: int, i: int) -> tuple[int, int]:
    """The i-th of `parts` nearly equal pieces of [offset, offset + count): (offset, count); the
    first count % parts pieces get one element more (algo::split)."""
    if parts < 1 or not 0 <= i < parts:
        raise InputError(f"split: piece {i} of {parts}: expected 0 <= i < parts and parts >= 1")
    base, extra = divmod(count, parts)
    return offset + i * base + min(i, extra), base + (1 if i < extra else 0)


def slices(chunk: Chunk, slice_elems: int) -> list[Chunk]:
    """`chunk` cut into ceil(count / slice_elems) nearly equal slices (algo::slice_count, slice)."""
    if chunk.count == 0:
        return []
    n = -(-chunk.count // max(1, slice_elems))
    return [Chunk(chunk.buffer, *split(chunk.offset, chunk.count, n, k)) for k in range(n)]


# ---------------------------------------------------------------------------------------------
# The registry: the C++ algorithms, and generators written in Python beside them.

GeneratorFn = Callable[[Layout, CollectiveArgs, Tuning], Union[Schedule, ScheduleBuilder]]
SupportsFn = Callable[[Layout, CollectiveArgs, Tuning], Union[bool, tuple]]


class _PythonAlgorithm:
    def __init__(self, name: str, description: str, collective: str, fn: GeneratorFn,
                 supports: Optional[SupportsFn]):
        self.name, self.description, self.collective = name, description, collective
        self.fn, self.supports = fn, supports


_python_algorithms: dict[str, _PythonAlgorithm] = {}


def _builtin_names() -> list[str]:
    return [a["name"] for a in _topocoll.registry()]


def algorithms(collective: Optional[str] = None) -> list[dict]:
    """Every registered algorithm as {name, description, collective, origin}; origin "c++" for the
    library's registry, "python" for generators registered here. `collective` filters."""
    out = [dict(a, origin="c++") for a in _topocoll.registry()]
    out += [{"name": a.name, "description": a.description, "collective": a.collective, "origin": "python"}
            for a in _python_algorithms.values()]
    if collective is not None:
        wanted = _topocoll.collective_name(collective)  # InputError on an unknown name
        out = [a for a in out if a["collective"] == wanted]
    return out


def register(name: str, fn: GeneratorFn, *, description: str, collective: str = "allreduce",
             supports: Optional[SupportsFn] = None) -> None:
    """Makes `fn(layout, args, tuning) -> Schedule | ScheduleBuilder` an algorithm named `name`:
    generate, simulate, sweep and algorithms() then treat it as they treat a built-in one."""
    if not isinstance(name, str) or not name:
        raise InputError(f"algorithm name {name!r}: expected a non-empty string")
    if not callable(fn):
        raise TypeError(f"register({name!r}): the generator must be callable, got {type(fn).__name__}")
    if name in _builtin_names() or name in _python_algorithms:
        raise InputError(f"algorithm '{name}': already registered (names must be unique)")
    wanted = _topocoll.collective_name(collective)
    _python_algorithms[name] = _PythonAlgorithm(name, description, wanted, fn, supports)


def generator(name: str, *, description: str, collective: str = "allreduce",
              supports: Optional[SupportsFn] = None):
    """Decorator form of register()."""
    def wrap(fn: GeneratorFn) -> GeneratorFn:
        register(name, fn, description=description, collective=collective, supports=supports)
        return fn
    return wrap


def unregister(name: str) -> None:
    """Removes a generator registered from Python (built-in algorithms stay)."""
    if name not in _python_algorithms:
        raise InputError(f"algorithm '{name}': not a Python-registered algorithm "
                         f"(known: {', '.join(_python_algorithms) or 'none'})")
    del _python_algorithms[name]


def _unknown(name: str) -> InputError:
    known = _builtin_names() + list(_python_algorithms)
    return InputError(f"unknown algorithm '{name}': expected one of {', '.join(known)}")


def _layout_of(where: Union[Topology, Layout]) -> Layout:
    if isinstance(where, Topology):
        return where.layout
    if isinstance(where, Layout):
        return where
    raise TypeError(f"expected a Topology or a Layout, got {type(where).__name__}")


def supports(name: str, where: Union[Topology, Layout], args: CollectiveArgs,
             tuning: Optional[Tuning] = None) -> tuple[bool, str]:
    """(ok, reason): whether algorithm `name` can run this call here."""
    layout, tuning = _layout_of(where), tuning or Tuning()
    if name in _python_algorithms:
        alg = _python_algorithms[name]
        if alg.collective != args.collective:
            return False, f"{name} is a {alg.collective} algorithm"
        if alg.supports is None:
            return True, ""
        answer = alg.supports(layout, args, tuning)
        return (answer, "" if answer else "not supported") if isinstance(answer, bool) else tuple(answer)
    if name not in _builtin_names():
        raise _unknown(name)
    return _topocoll.supports(name, layout, args, tuning)


def generate(name: str, where: Union[Topology, Layout], args: CollectiveArgs,
             tuning: Optional[Tuning] = None) -> Schedule:
    """The schedule of algorithm `name` (built-in or Python) for this call on this layout."""
    layout, tuning = _layout_of(where), tuning or Tuning()
    if not isinstance(args, CollectiveArgs):
        raise TypeError(f"args: expected a CollectiveArgs, got {type(args).__name__}")
    if name not in _python_algorithms:
        if name not in _builtin_names():
            raise _unknown(name)
        return _topocoll.generate(name, layout, args, tuning)
    if args.ranks != layout.ranks:
        raise InputError(f"args.ranks {args.ranks}: the layout has {layout.ranks} ranks")
    ok, reason = supports(name, layout, args, tuning)
    if not ok:
        raise InputError(f"{name} is not supported here: {reason}")
    out = _python_algorithms[name].fn(layout, args, tuning)
    if isinstance(out, ScheduleBuilder):
        out = out.build()
    if not isinstance(out, Schedule):
        raise TypeError(f"generator '{name}' returned {type(out).__name__}; expected a Schedule or ScheduleBuilder")
    return out


def cost(name: str, where: Union[Topology, Layout], args: CollectiveArgs,
         tuning: Optional[Tuning] = None) -> dict:
    """A built-in algorithm's cost sheet: steps, bytes_sent, inter_bytes_sent, busbw_factor."""
    if name not in _builtin_names():
        raise _unknown(name)
    return _topocoll.cost(name, _layout_of(where), args, tuning or Tuning())


# ---------------------------------------------------------------------------------------------
# Verification and simulation.


def verify(schedule: Schedule, where: Union[Topology, Layout, None] = None, *, in_place: bool = False) -> dict:
    """The verifier's verdict as a dict: ok, failure ("OK" when ok), message, operations, steps
    and bytes sent. With a topology or layout, bytes split intra / inter node as they are placed."""
    if isinstance(schedule, ScheduleBuilder):
        schedule = schedule.build()
    layout = None if where is None else _layout_of(where)
    return _topocoll.verify(schedule, layout, in_place)


def simulate(topology: Topology, schedule: Union[Schedule, ScheduleBuilder], *, engine: str = "analytic",
             protocol: str = "", calibration: Optional[str] = None, slice_bytes: Optional[int] = None,
             algorithm: Optional[str] = None) -> dict:
    """One simulated point as `topocoll sim` computes it (simulator/sweep.hpp simulate_point):
    every protocol NCCL would enable ("" or "auto"; or "LL", "LL128", "Simple"), the fastest
    kept. Returns the record (docs/records.md) as a plain dict."""
    if not isinstance(topology, Topology):
        raise TypeError(f"topology: expected a Topology (load_topology), got {type(topology).__name__}")
    if isinstance(schedule, ScheduleBuilder):
        schedule = schedule.build()
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule: expected a Schedule, got {type(schedule).__name__}")
    text = _topocoll.simulate_json(topology, schedule, engine, protocol, calibration or "",
                                   Tuning().slice_bytes if slice_bytes is None else slice_bytes,
                                   algorithm or schedule.name)
    return json.loads(text)


def sweep(topology: Topology, names: Iterable[str], sizes: Iterable[int], *, collective: str = "allreduce",
          dtype: str = "float32", op: str = "sum", root: int = 0, tuning: Optional[Tuning] = None,
          engine: str = "analytic", protocol: str = "") -> list[dict]:
    """Every algorithm of `names` at every nccl-tests size of `sizes` (bytes), as records; each
    point is the call nccl-tests runs at that size (nccl_tests_args)."""
    tuning = tuning or Tuning()
    if isinstance(names, str):
        names = [n for n in names.split(",") if n]
    records = []
    for name in names:
        for size in sizes:
            args = nccl_tests_args(collective, size, dtype, op, topology.num_ranks, root)
            s = generate(name, topology, args, tuning)
            records.append(simulate(topology, s, engine=engine, protocol=protocol,
                                    slice_bytes=tuning.slice_bytes, algorithm=name))
    return records


def to_dataframe(records: Iterable[dict]):
    """Records as a pandas DataFrame, one row per record (pandas must be installed)."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("to_dataframe needs pandas (pip install -r python/requirements.txt)") from e
    return pandas.DataFrame(list(records))


# ---------------------------------------------------------------------------------------------
# Interchange: topocoll's schedule JSON (docs/schedule.md).
#
# load_schedule_file(path) takes any file `topocoll sim --schedule` takes (JSON, and MSCCL XML
# where the library reads it). MSCCL XML text (algorithms/ir/msccl_xml.hpp) is bound where the
# library has it (python/src/msccl.cpp): HAVE_MSCCL says so.

HAVE_MSCCL = hasattr(_topocoll, "schedule_to_msccl_xml")


def _need_msccl(what: str) -> None:
    if not HAVE_MSCCL:
        raise NotImplementedError(f"{what}: this build of topocoll has no MSCCL XML interchange "
                                  "(algorithms/ir/msccl_xml.hpp)")


def write_msccl_xml(schedule: Schedule) -> str:
    """The schedule as MSCCL XML (the <algo><gpu><tb><step> format msccl-tools writes)."""
    _need_msccl("write_msccl_xml")
    return _topocoll.schedule_to_msccl_xml(schedule)


def read_msccl_xml(text: str, count: int, source_name: str = "<string>", *, dtype: str = "float32",
                   op: str = "sum") -> Schedule:
    """An MSCCL XML program instantiated at `count` elements (a multiple of msccl_granularity)."""
    _need_msccl("read_msccl_xml")
    return _topocoll.schedule_from_msccl_xml(text, source_name, count, dtype, op)


def msccl_granularity(text: str, source_name: str = "<string>") -> int:
    """The counts an MSCCL XML program runs at are positive multiples of this."""
    _need_msccl("msccl_granularity")
    return _topocoll.msccl_count_granularity(text, source_name)


def write_schedule(schedule: Schedule) -> str:
    """The schedule as topocoll-schedule JSON text."""
    return _topocoll.schedule_to_json(schedule)


def read_schedule(text: str, source_name: str = "<string>") -> Schedule:
    """A schedule from JSON text; InputError names `source_name` and where the problem is."""
    return _topocoll.schedule_from_json(text, source_name)


def save_schedule(schedule: Schedule, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(write_schedule(schedule))


def load_schedule(path: str) -> Schedule:
    return _topocoll.load_schedule_json(str(path))


def _schedule_repr(s: Schedule) -> str:
    a = s.args
    return (f"Schedule('{s.name}', {a.collective}, {a.count} x {a.dtype}, {s.num_ranks} ranks, "
            f"{s.num_channels} channels)")


def _args_repr(a: CollectiveArgs) -> str:
    sizes = "" if a.sizes is None else f", sizes=<{a.ranks}x{a.ranks} matrix>"
    return (f"CollectiveArgs(collective='{a.collective}', count={a.count}, dtype='{a.dtype}', op='{a.op}', "
            f"ranks={a.ranks}, root={a.root}{sizes})")


def _topology_repr(t: Topology) -> str:
    return f"Topology('{t.name}', {t.nodes} nodes, {t.num_ranks} ranks, fabric {t.fabric})"


def _tuning_repr(t: Tuning) -> str:
    return f"Tuning(channels={t.channels}, slice_bytes={t.slice_bytes}, pipeline_depth={t.pipeline_depth})"


Schedule.__repr__ = _schedule_repr
CollectiveArgs.__repr__ = _args_repr
Topology.__repr__ = _topology_repr
Tuning.__repr__ = _tuning_repr
