#!/usr/bin/env bash
# `topocoll import nccl-tests` and `topocoll calibrate`: every layout fixture of
# tools/testdata/nccl-tests imports with the fields its log names, the records validate and
# overlay on simulated ones in scripts/plot, each bad log gives one error line naming FILE:LINE and
# exit 2, and calibrate fits, writes a file sim reads, and reports its residuals.
# Usage: import_test.sh BIN_DIR REPO_DIR
set -u
bin="$1"
repo="$2"
. "$repo/tools/test_lib.sh"
topocoll="$bin/topocoll"
data="$repo/tools/testdata/nccl-tests"

# field FILE EXPR: a Python expression over `r` (the list of records) printed.
field() { python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print($2)" "$1"; }

# Good layouts: records, and what they carry.
"$topocoll" import nccl-tests "$data/v2.19-allreduce-2node.log" --topology dgx-a100 -o "$tmp/v219.jsonl" 2>"$tmp/err"
check "[ $? -eq 0 ]" "v2.19 log: import failed: $(cat "$tmp/err")"
check "[ \"$(field "$tmp/v219.jsonl" 'len(r)')\" = 8 ]" "v2.19 log: 4 rows x (out-of-place, in-place) = 8 records expected"
check "[ \"$(field "$tmp/v219.jsonl" 'sorted({(x["ranks"],x["nodes"],x["nccl_version"],x["collective"],x["engine"],x["kind"]) for x in r})')\" = \"[(16, 2, '2.22.3', 'allreduce', 'nccl-tests', 'measured')]\" ]" \
  "v2.19 log: ranks 16, nodes 2, NCCL 2.22.3 (the INFO line over the headers' 2.22.3), allreduce expected: $(field "$tmp/v219.jsonl" 'r[0]')"
check "[ \"$(field "$tmp/v219.jsonl" 'r[0]["machine"]')\" = 'node-a01+node-a02: NVIDIA A100-SXM4-40GB' ]" "v2.19 log: machine from the device lines"
check "[ \"$(field "$tmp/v219.jsonl" '[x["in_place"] for x in r[:2]]+["wrong" in r[0]]')\" = '[False, True, False]' ]" \
  "v2.19 log: out-of-place then in-place, #wrong N/A gives no wrong field"
check "[ \"$(field "$tmp/v219.jsonl" '(r[6]["size_bytes"], r[6]["time_us"], r[6]["busbw_gbps"])')\" = '(134217728, 1430.0, 175.98)' ]" \
  "v2.19 log: the 128 MiB row's numbers"

"$topocoll" import nccl-tests "$data/v2.13-allgather.log" -o "$tmp/v213.jsonl" 2>"$tmp/err"
check "[ \"$(field "$tmp/v213.jsonl" 'sorted({(x["collective"],x["ranks"],x["nccl_version"],x["op"]) for x in r})')\" = \"[('allgather', 8, '2.18.5', 'sum')]\" ]" \
  "v2.13 log: allgather over 8 ranks, NCCL 2.18.5 from nccl-library=21805: $(cat "$tmp/err")"
check "[ \"$(field "$tmp/v213.jsonl" 'any("wrong" in x for x in r)')\" = False ]" "v2.13 log: an error magnitude is not a #wrong count"

"$topocoll" import nccl-tests "$data/v2.0-oop-only.log" --collective allreduce -o "$tmp/v20.jsonl" 2>"$tmp/err"
check "[ \"$(field "$tmp/v20.jsonl" '(len(r), r[0]["ranks"], r[0]["in_place"], "nccl_version" in r[0])')\" = '(3, 4, False, False)' ]" \
  "old layout: 3 out-of-place records over 4 ranks, no version: $(cat "$tmp/err")"

"$topocoll" import nccl-tests "$data/multi-run.log" -o "$tmp/multi.jsonl" 2>"$tmp/err"
check "[ \"$(field "$tmp/multi.jsonl" '[x["collective"] for x in r if not x["in_place"]]')\" = \"['allreduce', 'allreduce', 'broadcast']\" ]" \
  "multi-run log: both tables, each with its collective"
check "[ \"$(field "$tmp/multi.jsonl" 'r[-1].get("wrong")')\" = 0 ]" "multi-run log: #wrong 0 kept"

"$topocoll" import nccl-tests "$repo/experiments/calibration/data/alcf-sophia-dgx-a100-2node.csv" --topology dgx-a100 -o "$tmp/alcf.jsonl" 2>"$tmp/err"
check "[ \"$(field "$tmp/alcf.jsonl" '(len(r), r[0]["ranks"], r[0]["nodes"], r[0]["nccl_version"], r[0]["time_us"], r[0]["machine"])')\" = \"(174, 16, 2, '2.22.3', 37.17, 'sophia-gpu-04+sophia-gpu-09')\" ]" \
  "calibration CSV: 3 runs x 29 rows x 2 groups, 16 ranks, 2 nodes, the first row: $(cat "$tmp/err")"

"$repo/scripts/check-records" "$tmp/v219.jsonl" "$tmp/v213.jsonl" "$tmp/v20.jsonl" "$tmp/multi.jsonl" "$tmp/alcf.jsonl" >"$tmp/cr" 2>&1
check "[ $? -eq 0 ]" "imported records do not validate: $(cat "$tmp/cr")"

# Bad logs: one line on stderr naming the file (and line), exit 2.
while IFS='|' read -r file want; do
  "$topocoll" import nccl-tests "$data/bad/$file" -o "$tmp/bad.jsonl" 2>"$tmp/err"
  rc=$?
  check "[ $rc -eq 2 ] && [ \$(wc -l <\"$tmp/err\") -eq 1 ] && grep -qF -- \"$want\" \"$tmp/err\"" \
    "bad/$file: expected exit 2 and one line with '$want', got $rc: $(cat "$tmp/err")"
done <<'TABLE'
no-table.log|no-table.log: no nccl-tests table
truncated-row.log|truncated-row.log:9: 6 fields, expected 13
non-numeric.log|non-numeric.log:8: field 'time' = 'fast', expected a finite number
duplicate-rank.log|duplicate-rank.log:8: the device lines of this run list ranks that are not 0..4 once each (rank 2 twice)
mixed-ranks.log|mixed-ranks.log:9: busbw / algbw = 1.750, expected 1.500 for 4 ranks
unknown-collective.log|unknown-collective.log:7: sendrecv_perf: not a collective of the record schema
no-collective.log|no-collective.log:6: the log names no collective
mixed-ranks.csv|mixed-ranks.csv:4: 16 ranks in a table of 8 ranks
TABLE
"$topocoll" import nccl-tests "$tmp/missing.log" 2>"$tmp/err"
check "[ $? -eq 2 ] && grep -q 'missing.log: cannot read' \"$tmp/err\"" "a missing log: exit 2 naming it"

# scripts/plot overlays the imported records on simulated ones: its figures and summary with
# matplotlib; without it, its pairing of measured with simulated records (the same code).
mkdir -p "$tmp/plot"
"$topocoll" import nccl-tests "$data/a100-1node-small.csv" --topology dgx-a100 -o "$tmp/plot/measured.jsonl" 2>/dev/null
"$topocoll" sim --topology dgx-a100 --algorithm ring,dbt -b 32K -e 256M -f 2 --format jsonl -O "$tmp/plot/records.jsonl" 2>/dev/null
if python3 -c 'import matplotlib' 2>/dev/null; then
  "$repo/scripts/plot" "$tmp/plot" >"$tmp/plot.out" 2>&1
  check "[ $? -eq 0 ] && grep -q 'measured nccl vs simulated' \"$tmp/plot/figures/summary.md\"" \
    "scripts/plot: no measured-vs-simulated table for imported records: $(tail -3 "$tmp/plot.out")"
else
  echo "import_test: no matplotlib: scripts/plot's pairing checked, its figures not drawn"
  pairs=$(python3 - "$repo/scripts/plot" "$tmp/plot/measured.jsonl" "$tmp/plot/records.jsonl" <<'PY'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("plot", sys.argv[1])
spec = importlib.util.spec_from_loader("plot", loader)
plot = importlib.util.module_from_spec(spec)
loader.exec_module(plot)
errs = plot.measured_errors(plot.Data(plot.load_records(sys.argv[2:], [])))
print(sorted((k[0][0], k[0][1], k[1], len(v)) for k, v in errs.items()))
PY
)
  check "echo \"$pairs\" | grep -q \"('dgx-a100', 8, 'nccl', 8)\"" "scripts/plot does not pair the imported records with simulated ones: $pairs"
fi

# calibrate: fits the small A100 set, lowers the residual, writes a file sim loads.
"$topocoll" calibrate --topology dgx-a100 --from "$data/a100-1node-small.csv" -O "$tmp/calib.json" >"$tmp/cal.out" 2>"$tmp/err"
check "[ $? -eq 0 ]" "calibrate failed: $(cat "$tmp/err")"
res=$(sed -n 's/^# rms ln-time residual: default \([0-9.]*\), fitted \([0-9.]*\)$/\1 \2/p' "$tmp/cal.out")
check "[ -n \"$res\" ] && python3 -c 'import sys; d,f=map(float,sys.argv[1:]); sys.exit(0 if f < d else 1)' $res" \
  "calibrate: the fit does not lower the residual of the fitted set ($res)"
check "grep -q '^# median abs time error, leave-one-size-out: all' \"$tmp/cal.out\"" "calibrate: no leave-one-size-out line"
check "[ \$(grep -c '^ ' \"$tmp/cal.out\") -eq 8 ]" "calibrate: a residual row per size (8) expected"
"$topocoll" sim --topology dgx-a100 --nodes 4 -b 1M -e 1M --calibration "$tmp/calib.json" >"$tmp/sim.out" 2>"$tmp/err"
check "[ $? -eq 0 ] && grep -q \"calibration $tmp/calib.json\" \"$tmp/sim.out\"" "sim does not load the fitted file: $(cat "$tmp/err")"

# calibrate: bad input.
"$topocoll" calibrate --topology dgx-a100 --nodes 2 --from "$data/a100-1node-small.csv" -O "$tmp/c2.json" >/dev/null 2>"$tmp/err"
check "[ $? -eq 2 ] && grep -q 'a100-1node-small.csv:9: 8 ranks; dgx-a100 x 2 has 16 GPUs' \"$tmp/err\"" \
  "calibrate on the wrong scale: $(cat "$tmp/err")"
"$topocoll" calibrate --topology dgx-a100 --from "$data/bad/truncated-row.log" -O "$tmp/c3.json" >/dev/null 2>"$tmp/err"
check "[ $? -eq 2 ] && [ \$(wc -l <\"$tmp/err\") -eq 1 ] && grep -q 'truncated-row.log:9' \"$tmp/err\"" "calibrate on a bad log: $(cat "$tmp/err")"
"$topocoll" calibrate --topology dgx-a100 --from "$data/a100-1node-small.csv" >/dev/null 2>"$tmp/err"
check "[ $? -eq 2 ]" "calibrate without -O: exit 2 expected"

summary import_test
