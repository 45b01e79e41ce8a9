#!/usr/bin/env python3
"""tools/trace_check.py TRACE.json [--expect-flows N] [--expect-ranks LIST]: a strict checker of the
Chrome Trace Event Format as `topocoll sim --trace` writes it (the JSON object form).

Fails (exit 1, one line per problem, at most 20) unless:
  - the file is one JSON object without duplicate keys, with "traceEvents" (a list),
    "displayTimeUnit" "ms" or "ns" when present, "otherData" an object of strings when present;
  - every event has a known phase and that phase's fields with their types: X (name, cat, pid,
    tid, ts >= 0, dur >= 0), M (process_name / thread_name with args.name, process_sort_index /
    thread_sort_index with an integer args.sort_index), s and f (name, cat, id, pid, tid, ts;
    f with "bp": "e");
  - complete events on one (pid, tid) track nest: none starts inside another and ends after it
    (Perfetto does not support partial overlap on a thread track);
  - every track with events has a thread_name, every pid a process_name;
  - every flow id has one "s" and one "f", the "f" not before the "s", each inside a complete
    event of its own track (the slice it binds to).
Times are compared as exact decimals (the format's microseconds with up to 3 decimals = ns).
Python standard library only.
"""
import argparse
import json
import sys
from decimal import Decimal


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError(f"duplicate keys {sorted(dup)}")
    return dict(pairs)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or isinstance(v, Decimal)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--expect-flows", type=int, default=None, help="fail unless the trace has this many flows")
    ap.add_argument("--expect-ranks", default=None, help="comma list of the pids the trace must hold exactly")
    a = ap.parse_args()
    problems = []

    def bad(msg):
        problems.append(msg)

    try:
        with open(a.trace, encoding="utf-8") as f:
            doc = json.load(f, object_pairs_hook=no_duplicates, parse_float=Decimal)
    except (OSError, ValueError) as e:
        print(f"trace_check: {a.trace}: not a readable JSON trace: {e}")
        return 1
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        print(f"trace_check: {a.trace}: expected an object with a \"traceEvents\" list")
        return 1
    if "displayTimeUnit" in doc and doc["displayTimeUnit"] not in ("ms", "ns"):
        bad(f"displayTimeUnit {doc['displayTimeUnit']!r}: expected ms or ns")
    if "otherData" in doc and not (
        isinstance(doc["otherData"], dict) and all(isinstance(v, str) for v in doc["otherData"].values())
    ):
        bad("otherData: expected an object of strings")

    slices = {}  # (pid, tid) -> [(ts, end)]
    named_threads, named_pids = set(), set()
    flows = {}  # id -> {"s": (pid, tid, ts), "f": ...}
    for i, e in enumerate(doc["traceEvents"]):
        where = f"traceEvents[{i}]"
        if not isinstance(e, dict):
            bad(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if ph == "X":
            need = {"name": str, "cat": str}
            for k, t in need.items():
                if not isinstance(e.get(k), t):
                    bad(f"{where}: X event without a string {k!r}")
            if not (is_int(e.get("pid")) and is_int(e.get("tid"))):
                bad(f"{where}: X event without integer pid and tid")
                continue
            if not (is_num(e.get("ts")) and is_num(e.get("dur")) and e["ts"] >= 0 and e["dur"] >= 0):
                bad(f"{where}: X event needs ts >= 0 and dur >= 0, got ts {e.get('ts')!r} dur {e.get('dur')!r}")
                continue
            ts, dur = Decimal(str(e["ts"])), Decimal(str(e["dur"]))
            slices.setdefault((e["pid"], e["tid"]), []).append((ts, ts + dur, i))
        elif ph == "M":
            name, args = e.get("name"), e.get("args")
            if not is_int(e.get("pid")) or not isinstance(args, dict):
                bad(f"{where}: M event without an integer pid and args")
                continue
            if name in ("process_name", "thread_name"):
                if not isinstance(args.get("name"), str):
                    bad(f"{where}: {name} without a string args.name")
                if name == "process_name":
                    named_pids.add(e["pid"])
                else:
                    if not is_int(e.get("tid")):
                        bad(f"{where}: thread_name without an integer tid")
                    named_threads.add((e["pid"], e.get("tid")))
            elif name in ("process_sort_index", "thread_sort_index"):
                if not is_int(args.get("sort_index")):
                    bad(f"{where}: {name} without an integer args.sort_index")
            else:
                bad(f"{where}: unknown metadata event {name!r}")
        elif ph in ("s", "f"):
            for k in ("name", "cat"):
                if not isinstance(e.get(k), str):
                    bad(f"{where}: flow event without a string {k!r}")
            if not (is_int(e.get("pid")) and is_int(e.get("tid")) and is_num(e.get("ts")) and "id" in e):
                bad(f"{where}: flow event needs pid, tid, ts and id")
                continue
            if ph == "f" and e.get("bp") != "e":
                bad(f"{where}: flow end without \"bp\": \"e\"")
            f = flows.setdefault(e["id"], {})
            if ph in f:
                bad(f"{where}: a second {ph!r} for flow id {e['id']}")
            f[ph] = (e["pid"], e["tid"], Decimal(str(e["ts"])))
        else:
            bad(f"{where}: phase {ph!r}: expected X, M, s or f")

    for track, evs in slices.items():
        if track not in named_threads:
            bad(f"track pid {track[0]} tid {track[1]}: events but no thread_name")
        if track[0] not in named_pids:
            bad(f"pid {track[0]}: events but no process_name")
        evs.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for ts, end, i in evs:
            while stack and stack[-1][1] <= ts:
                stack.pop()
            if stack and end > stack[-1][1]:
                bad(f"track pid {track[0]} tid {track[1]}: traceEvents[{i}] [{ts}, {end}] overlaps "
                    f"traceEvents[{stack[-1][2]}] [{stack[-1][0]}, {stack[-1][1]}] without nesting")
                continue
            stack.append((ts, end, i))

    def inside(point):
        pid, tid, ts = point
        return any(s <= ts <= e for s, e, _ in slices.get((pid, tid), []))

    for fid, f in flows.items():
        if set(f) != {"s", "f"}:
            bad(f"flow id {fid}: has {sorted(f)}, expected one s and one f")
            continue
        if f["f"][2] < f["s"][2]:
            bad(f"flow id {fid}: ends at {f['f'][2]} before it starts at {f['s'][2]}")
        for ph in ("s", "f"):
            if not inside(f[ph]):
                bad(f"flow id {fid}: its {ph!r} at {f[ph][2]} is inside no slice of pid {f[ph][0]} tid {f[ph][1]}")
    if a.expect_flows is not None and len(flows) != a.expect_flows:
        bad(f"{len(flows)} flows, expected {a.expect_flows}")
    if a.expect_ranks is not None:
        want = {int(x) for x in a.expect_ranks.split(",") if x}
        got = {pid for pid, _ in slices}
        if got != want:
            bad(f"events of ranks {sorted(got)[:20]}, expected {sorted(want)[:20]}")

    for p in problems[:20]:
        print(f"trace_check: {a.trace}: {p}")
    if problems:
        print(f"trace_check: {a.trace}: {len(problems)} problems")
        return 1
    n = sum(len(v) for v in slices.values())
    print(f"trace_check: {a.trace}: OK: {n} slices on {len(slices)} tracks, {len(flows)} flows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
