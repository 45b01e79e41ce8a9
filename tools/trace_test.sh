#!/usr/bin/env bash
# `topocoll sim --trace`: traces pass the strict checker (tools/trace_check.py: nesting per
# track, flows bound to their slices, metadata) on both engines and on every kind of schedule
# (rings, trees, all-to-all with overlapping sends, NVLS switch operations); --trace-algorithm,
# --trace-size and --trace-ranks choose what is written, --trace-max-slices merges big traces;
# the checker itself fails on a broken trace; bad flags get one error line and exit 2.
# Usage: trace_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
checker="$2/tools/trace_check.py"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

expect_error() {  # expect_error EXPECTED_SUBSTRING ARGS...: exit 2, one error line with the substring
  local want="$1"; shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" "$tmp/err" || [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    fail "$* : exit $rc, stderr '$(head -c 400 "$tmp/err")', expected exit 2 and one line with '$want'"
  else ok; fi
}
traced() {  # traced NAME CHECKER_ARGS -- SIM_ARGS...: the trace is written and passes the checker
  local name="$1"; shift
  local cargs=()
  while [ "$1" != "--" ]; do cargs+=("$1"); shift; done
  shift
  if ! "$bin" sim "$@" --no-nccl-model --trace "$tmp/$name.json" >"$tmp/out" 2>"$tmp/err"; then
    fail "$name: sim exit $? $(head -c 300 "$tmp/err")"; return 1
  fi
  if python3 "$checker" "$tmp/$name.json" "${cargs[@]}" >"$tmp/check" 2>&1; then ok; else fail "$name: $(cat "$tmp/check")"; fi
}

for engine in analytic simgrid; do
  traced "ring-$engine" -- -t dgx-h100 --nodes 2 --algorithm ring -b 1M -e 1M --channels 4 --engine "$engine"
  traced "dbt-$engine" -- -t dgx-h100 --nodes 2 --algorithm dbt -b 256K -e 256K --channels 2 --engine "$engine"
  traced "a2a-$engine" -- -t dgx-h100 --nodes 2 --collective alltoall --algorithm alltoall-pairwise -b 1M -e 1M --channels 2 --engine "$engine"
done
traced nvls -- -t dgx-h100 --algorithm nvls -b 1M -e 1M
# NVLS: one "switch" arrow into each switch receive, from a switch send of the same rank group.
if traced nvls-flows -- -t dgx-h100 --algorithm nvls -b 256K -e 256K --channels 2; then
  recvs=$(grep -c '"cat": "switch_recv"' "$tmp/nvls-flows.json")
  python3 "$checker" "$tmp/nvls-flows.json" --expect-flows "$recvs" >"$tmp/check" 2>&1
  rc=$?
  check '[ $rc -eq 0 ] && [ "$recvs" -gt 0 ]' "nvls switch arrows: $(cat "$tmp/check") ($recvs switch receives)"
  python3 - "$tmp/nvls-flows.json" >"$tmp/check" 2>&1 <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
starts = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("name") == "switch"}
ends = {e["id"]: e for e in ev if e.get("ph") == "f" and e.get("name") == "switch"}
x = [e for e in ev if e.get("ph") == "X"]
def slice_at(e):
    return [s for s in x if s["pid"] == e["pid"] and s["tid"] == e["tid"] and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
bad = 0
for i, s in starts.items():
    a, b = slice_at(s), slice_at(ends[i])
    if not any(z["cat"] == "switch_send" for z in a) or not any(z["cat"] == "switch_recv" for z in b):
        bad += 1
print(f"{len(starts)} switch arrows, {bad} not from a switch_send to a switch_recv")
sys.exit(1 if bad or not starts else 0)
PY
  rc=$?
  check '[ $rc -eq 0 ]' "nvls switch arrows bound to the wrong slices: $(cat "$tmp/check")"
fi
# A ring's every send is received: flows = sends, and the metadata names the run.
if traced ring-meta -- -t pcie-8gpu --algorithm ring -b 64K -e 64K --channels 2 --slice 64K; then
  sends=$(grep -c '"cat": "send"' "$tmp/ring-meta.json")
  python3 "$checker" "$tmp/ring-meta.json" --expect-flows "$sends" >"$tmp/check" 2>&1
  rc=$?
  check '[ $rc -eq 0 ] && [ "$sends" -gt 0 ]' "ring flows: $(cat "$tmp/check") ($sends sends)"
  check 'grep -q "\"otherData\": {\"algorithm\":\"ring\"" "$tmp/ring-meta.json" && grep -q "\"engine\":\"analytic\"" "$tmp/ring-meta.json" && grep -q "\"size_bytes\":\"65536\"" "$tmp/ring-meta.json"' \
    "trace metadata: $(head -c 300 "$tmp/ring-meta.json")"
  # The build's commit (12 hex digits, or "unknown" outside a checkout) and the traced run's
  # protocol and channels.
  check 'grep -Eq "\"commit\":\"([0-9a-f]{12}(\+uncommitted changes)?|unknown)\"" "$tmp/ring-meta.json" && grep -Eq "\"protocol_channels\":\"(LL|LL128|Simple) x2\"" "$tmp/ring-meta.json"' \
    "trace metadata commit and protocol: $(head -c 400 "$tmp/ring-meta.json")"
fi
# --trace-algorithm / --trace-size: the second algorithm at the smallest size.
if traced choose -- -t pcie-8gpu --algorithm ring,dbt -b 1K -e 64K --trace-algorithm dbt --trace-size 1K; then
  check 'grep -q "\"algorithm\":\"dbt\"" "$tmp/choose.json" && grep -q "\"size_bytes\":\"1024\"" "$tmp/choose.json"' \
    "--trace-algorithm dbt --trace-size 1K: $(head -c 300 "$tmp/choose.json")"
  check 'grep -q "trace .*: dbt at 1024 B" "$tmp/err"' "the trace line on stderr: $(cat "$tmp/err")"
fi
# --trace-ranks, and the default for large jobs: the first and last 4 ranks of 128 nodes x 8.
traced ranks --expect-ranks 2,3,4,9 -- -t dgx-h100 --nodes 2 --algorithm ring -b 64K -e 64K --trace-ranks 2-4,9
traced big --expect-ranks "$(seq -s, 0 3),$(seq -s, 1020 1023)" -- -t dgx-h100 --nodes 128 --algorithm ring -b 8M -e 8M --protocol Simple --channels 2

# Aggregation (--trace-max-slices): each track's consecutive operations of one kind and peer merge,
# so that the slices are about the limit; they hold every operation and every byte of the full
# trace, pass the checker, and one arrow leaves each send slice.
if traced full -- -t dgx-h100 --nodes 2 --algorithm ring -b 64M -e 64M --protocol Simple &&
  traced merged -- -t dgx-h100 --nodes 2 --algorithm ring -b 64M -e 64M --protocol Simple --trace-max-slices 5000; then
  python3 - "$tmp/full.json" "$tmp/merged.json" >"$tmp/agg" 2>&1 <<'PY'
import json, sys
full, merged = (json.load(open(f)) for f in sys.argv[1:3])
def slices(d): return [e for e in d["traceEvents"] if e["ph"] == "X"]
f, m = slices(full), slices(merged)
ops = sum(e["args"]["ops"] for e in m)
sends = sum(1 for e in m if e["cat"] == "send")
flows = sum(1 for e in merged["traceEvents"] if e["ph"] == "s")
per = merged["otherData"].get("ops_per_slice")
ok = (len(f) > 5000 and len(m) <= 5000 * 1.1 and ops == len(f)
      and sum(e["args"]["bytes"] for e in m) == sum(e["args"]["bytes"] for e in f)
      and flows == sends and per == "up to %d" % -(-len(f) // 5000) and "ops_per_slice" not in full["otherData"])
print(f"full {len(f)} slices, merged {len(m)} slices holding {ops} ops, {sends} send slices, {flows} flows, {per}")
sys.exit(0 if ok else 1)
PY
  rc=$?
  check '[ $rc -eq 0 ]' "aggregated trace: $(cat "$tmp/agg")"
  check 'grep -q "events (of [0-9]* operations: up to [0-9]* consecutive ones" "$tmp/err"' "the aggregated trace's line on stderr: $(cat "$tmp/err")"
fi

# The checker fails for the right reasons: partial overlap on a track, a flow without its end.
python3 - "$tmp/ring-meta.json" "$tmp/broken.json" "$tmp/noflow.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = [e for e in d["traceEvents"] if e["ph"] == "X" and e["dur"] > 0]
a = x[0]
b = dict(a, ts=a["ts"] + a["dur"] / 2, dur=a["dur"])  # starts inside a, ends after it
d2 = dict(d, traceEvents=d["traceEvents"] + [b])
json.dump(d2, open(sys.argv[2], "w"))
d3 = dict(d, traceEvents=[e for e in d["traceEvents"] if not (e["ph"] == "f" and e["id"] == 0)])
json.dump(d3, open(sys.argv[3], "w"))
PY
python3 "$checker" "$tmp/broken.json" >"$tmp/check" 2>&1
rc=$?
check '[ $rc -eq 1 ] && grep -q "overlaps .* without nesting" "$tmp/check"' "checker on a partial overlap: $(cat "$tmp/check")"
python3 "$checker" "$tmp/noflow.json" >"$tmp/check" 2>&1
rc=$?
check '[ $rc -eq 1 ] && grep -q "flow id 0: has \[.s.\], expected one s and one f" "$tmp/check"' "checker on a flow without its end: $(cat "$tmp/check")"

expect_error "--trace-algorithm hierarchical: not an algorithm of this run; expected one of ring, dbt" \
  sim -t pcie-8gpu --algorithm ring,dbt -b 1K -e 4K --trace "$tmp/x.json" --trace-algorithm hierarchical
expect_error "--trace-size 3K: not a size of this run; expected one of 1024, 2048, 4096" \
  sim -t pcie-8gpu --algorithm ring -b 1K -e 4K --trace "$tmp/x.json" --trace-size 3K
expect_error "--trace-ranks 0-8: rank 8 is not one of the 8 ranks" \
  sim -t pcie-8gpu --algorithm ring -b 1K -e 1K --trace "$tmp/x.json" --trace-ranks 0-8
expect_error "expected --trace FILE with them" sim -t pcie-8gpu --algorithm ring -b 1K -e 1K --trace-ranks 0-3
expect_error "--trace-max-slices: got -1, expected a number of slices, 0 or more" \
  sim -t pcie-8gpu --algorithm ring -b 1K -e 1K --trace "$tmp/x.json" --trace-max-slices -1

summary trace_test
