#!/usr/bin/env bash
# CTest script: every record we write validates against docs/records.schema.json (the schema of
# docs/records.md; checker scripts/check-records), and every JSON file we write loads in Python's
# json module. Covers the checker itself on bad fixtures (tests/records/), the committed records
# under experiments/, fresh `topocoll sim --format jsonl` and `topocoll exp run` records,
# `topocoll-bench --format jsonl` under mpirun when built, `sim --trace` timelines, and the JSON
# of `topo show`, `topo export` and `schedule export`, with names that need escaping (a quote, a
# backslash, a space in the file and folder names; a file name that is not UTF-8).
# Usage: records_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
src="$2"
check_records="$src/scripts/check-records"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

# json_loads FILE: Python's json module loads it (strict: no NaN/Infinity, no duplicate keys).
json_loads() {
  python3 - "$1" <<'PY'
import json, sys
def no_dup(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)
def no_constant(name):
    raise ValueError(name + " is not JSON")
with open(sys.argv[1], encoding="utf-8") as f:
    json.load(f, object_pairs_hook=no_dup, parse_constant=no_constant)
PY
}

# validate FILE LABEL: FILE's records validate.
validate() {
  if "$check_records" "$1" >"$tmp/check.out" 2>&1; then ok; else fail "$2: records fail the schema: $(head -c 600 "$tmp/check.out")"; fi
}

# --- the checker: the good fixture passes, every bad one fails --------------------------------
check '"$check_records" "$src/tests/records/good.jsonl" >/dev/null 2>&1' "check-records rejects tests/records/good.jsonl"
n=0
for f in "$src"/tests/records/bad-*.jsonl; do
  n=$((n + 1))
  check '! "$check_records" "$f" >/dev/null 2>&1' "check-records accepts $(basename "$f")"
done
check '[ $n -ge 20 ]' "only $n bad record fixtures"
check '! "$check_records" "$tmp/does-not-exist.jsonl" >/dev/null 2>&1' "check-records accepts a missing file"
: >"$tmp/empty.jsonl"
check '! "$check_records" "$tmp/empty.jsonl" >/dev/null 2>&1' "check-records accepts an empty file"

# --- committed records ------------------------------------------------------------------------
committed=("$src"/experiments/*/records*.jsonl "$src"/experiments/*/measured.jsonl)
for f in "${committed[@]}"; do
  [ -e "$f" ] || continue
  validate "$f" "committed $f"
done

# --- names that need escaping -----------------------------------------------------------------
weird="$tmp/a \"quoted\" \\ folder"
mkdir -p "$weird"
topo="$weird/we\"ird\\na me.xml"
cp "$src/experiments/sim-vs-real-local/topologies/local-cpu-2.xml" "$topo"
calib="$weird/cal\"ib\\ration.json"
cp "$src/experiments/sim-vs-real-local/calibration.json" "$calib"

# --- fresh `topocoll sim --format jsonl` records, and traces -----------------------------------
sim_case() {  # NAME ARGS...: records validate, the trace loads
  local name="$1"
  shift
  if "$bin" sim "$@" --format jsonl -O "$tmp/$name.jsonl" >"$tmp/out" 2>"$tmp/err"; then
    validate "$tmp/$name.jsonl" "sim $name"
  else
    fail "sim $name: exit $?: $(head -c 300 "$tmp/err")"
  fi
  if "$bin" sim "$@" --trace "$tmp/$name.trace.json" >"$tmp/out" 2>"$tmp/err"; then
    if json_loads "$tmp/$name.trace.json" 2>"$tmp/out"; then ok; else fail "sim $name: trace is not valid JSON: $(tail -c 300 "$tmp/out")"; fi
  else
    fail "sim $name --trace: exit $?: $(head -c 300 "$tmp/err")"
  fi
}
sim_case h100x2 -t dgx-h100 -N 2 --algorithm all -b 8 -e 1M -f 8
sim_case pcie -t pcie-8gpu --algorithm ring,dbt -b 1K -e 64K -f 4 -d half --op max --no-nccl-model
sim_case fat-tree -t dgx-a100 -N 4 --fabric fat-tree --oversubscription 2 --algorithm hierarchical -b 1M -e 1M -d bfloat16
sim_case single-switch -t dgx-h100 -N 2 --fabric single-switch --algorithm dbt -b 8 -e 8 --protocol LL128 --channels 4
sim_case weird-topology -t "$topo" --algorithm ring,dbt -b 8 -e 4K -f 8
sim_case weird-calibration -t "$topo" --algorithm ring -b 8 -e 64 --calibration "$calib"
sim_case simgrid -t "$topo" --algorithm ring -b 8 -e 1K -f 16 --engine simgrid
grep -q 'we\\"ird\\\\na me.xml' "$tmp/weird-topology.jsonl" && ok || fail "sim weird-topology: the topology name is not written escaped"
python3 -c 'import json,sys
for l in open(sys.argv[1]):
  r = json.loads(l); assert r["topology"] == sys.argv[2] and r["calibration"] == sys.argv[3], (r["topology"], r["calibration"])' \
  "$tmp/weird-calibration.jsonl" "$topo" "$calib" 2>"$tmp/out" && ok || fail "sim weird-calibration: names do not round-trip: $(cat "$tmp/out")"

# A file name that is not UTF-8: the JSON holds U+FFFD in its place (never an internal error).
latin1="$weird/$(printf 'caf\xe9').xml"
cp "$topo" "$latin1"
sim_case not-utf8 -t "$latin1" --algorithm ring -b 8 -e 64

# --- topo show / topo export / schedule export JSON -----------------------------------------
json_case() {  # NAME COMMAND...: exits 0 and writes JSON that loads
  local name="$1"
  shift
  if "$bin" "$@" >"$tmp/$name.json" 2>"$tmp/err"; then
    if json_loads "$tmp/$name.json" 2>"$tmp/out"; then ok; else fail "$name: not valid JSON: $(tail -c 300 "$tmp/out")"; fi
  else
    fail "$name: exit $?: $(head -c 300 "$tmp/err")"
  fi
}
json_case topo-show topo show -t "$topo" --format json
json_case topo-show-h100 topo show -t dgx-h100 -N 2 --format json
json_case topo-export topo export -t "$topo" --format json
json_case topo-show-not-utf8 topo show -t "$latin1" --format json
for a in ring dbt hierarchical; do
  json_case "schedule-$a" schedule export -t "$topo" -a "$a"
done

# --- `topocoll exp run` records, in a folder whose name needs escaping -------------------------
exp="$weird/exp \"q\" \\"
mkdir -p "$exp"
cat >"$exp/experiment.yaml" <<EOF2
description: records schema check
engine: analytic
grid:
  topologies: [dgx-h100, '$topo']
  nodes: [1]
  algorithms: [ring, dbt]
  sizes: {min: 1K, max: 16K, factor: 4}
  channels: [2]
EOF2
if "$bin" exp run "$exp/experiment.yaml" -q >"$tmp/out" 2>"$tmp/err"; then
  validate "$exp/records.jsonl" "exp run"
else
  fail "exp run: exit $?: $(head -c 300 "$tmp/err")"
fi

# --- `topocoll-bench --format jsonl` (when built, under mpirun) ------------------------------
if [ -x "$1/topocoll-bench" ] && command -v mpirun >/dev/null; then
  mpi_launcher
  if timeout 60 "${mpi[@]}" -np 2 "$1/topocoll-bench" --algorithm ring,dbt,mpi -b 8 -e 1K -f 8 -n 1 -w 0 --format jsonl \
      -O "$tmp/bench.jsonl" >"$tmp/out" 2>"$tmp/err"; then
    validate "$tmp/bench.jsonl" "topocoll-bench"
  else
    fail "bench jsonl run: exit $?: $(head -c 300 "$tmp/err")"
  fi
else
  echo "records: no topocoll-bench or mpirun: bench records not checked"
fi

summary records
