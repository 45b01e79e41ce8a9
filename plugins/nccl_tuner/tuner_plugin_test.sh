#!/usr/bin/env bash
# The NCCL tuner plugin through tuner_harness (NCCL's calls, no NCCL, no GPU), for every ABI
# version it exports: a hand-written table and its expected choices, bad tables (NCCL's choice
# kept, one log line), and `topocoll tune` -> plugin giving the choice `topocoll sim` prints.
# Usage: tuner_plugin_test.sh BUILD_DIR SOURCE_DIR
set -u
build="$1"
src="$2"
harness="$build/bin/tuner_harness"
plugin="$build/lib/libnccl-tuner-topocoll.so"
topocoll="$build/bin/topocoll"
data="$src/plugins/nccl_tuner/testdata"
# shellcheck source=tools/test_lib.sh
source "$src/tools/test_lib.sh"

# ask ABI TABLE HARNESS_ARGS...: the harness's stdout in $tmp/out, its log in $tmp/log; fails on
# a non-zero exit (an ABI violation or a table mismatch).
ask() {
  local abi=$1 table=$2
  shift 2
  if [ "$table" = unset ]; then
    env -u TOPOCOLL_TUNER_TABLE "$harness" "$plugin" --abi "$abi" "$@" >"$tmp/out" 2>"$tmp/log"
  else
    TOPOCOLL_TUNER_TABLE="$table" "$harness" "$plugin" --abi "$abi" "$@" >"$tmp/out" 2>"$tmp/log"
  fi
  local rc=$?
  if [ "$rc" -ne 0 ]; then fail "v$abi $table $*: exit $rc: $(cat "$tmp/out" "$tmp/log" | head -5)"; return 1; fi
  ok
}
same() {  # same EXPECTED_FILE WHAT
  if diff -u "$1" "$tmp/out" >"$tmp/diff"; then ok; else fail "$2: $(cat "$tmp/diff")"; fi
}

# --- the symbols NCCL looks for ------------------------------------------------------------
for v in 2 3 4 5; do
  if nm -D --defined-only "$plugin" | grep -q " ncclTunerPlugin_v$v\$"; then ok; else fail "no ncclTunerPlugin_v$v"; fi
done
# (names starting with __ are a sanitizer's instrumentation, e.g. ASan's __odr_asan.*)
others=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TDBR]$/ && $3 !~ /^ncclTunerPlugin_v[2-5]$/ && $3 !~ /^__/ {print $3}')
check '[ -z "$others" ]' "the plugin exports more than its ncclTunerPlugin_v* symbols: $others"

# --- a hand-written table: each row's choice, for a 2 x 16 job, every ABI version ----------
queries=(allreduce:0 allreduce:4095 allreduce:4096 allreduce:1048575 allreduce:1048576 allreduce:9223372036854775807
  allgather:100 reducescatter:1000 broadcast:5 reduce:5)
cat >"$tmp/want" <<'EOF'
allreduce 0 TREE/LL 4
allreduce 4095 TREE/LL 4
allreduce 4096 NVLS_TREE/SIMPLE 16
allreduce 1048575 NVLS_TREE/SIMPLE 16
allreduce 1048576 RING/SIMPLE 0
allreduce 9223372036854775807 RING/SIMPLE 0
allgather 100 nccl
reducescatter 1000 nccl
broadcast 5 RING/LL128 2
reduce 5 nccl
EOF
for v in 2 3 4 5; do
  ask $v "$data/hand.tuner" --nodes 2 --ranks 16 "${queries[@]}" && same "$tmp/want" "hand table, v$v"
  # the rows of another job apply to that job only
  ask $v "$data/hand.tuner" --nodes 4 --ranks 32 allgather:100 allreduce:0 &&
    printf 'allgather 100 RING/LL128 2\nallreduce 0 nccl\n' >"$tmp/want2" && same "$tmp/want2" "4 x 32 job, v$v"
  # CollNet where NCCL has it (v2 learns it from the CollNet Chain entry, as NCCL's adaptor does)
  ask $v "$data/hand.tuner" --nodes 2 --ranks 16 --available COLLNET_DIRECT,COLLNET_CHAIN reducescatter:1000 \
    reducescatter:1001 &&
    printf 'reducescatter 1000 COLLNET_DIRECT/SIMPLE 8\nreducescatter 1001 nccl\n' >"$tmp/want2" &&
    same "$tmp/want2" "CollNet available, v$v"
  # NVLS unavailable (no NVLS in this job): NCCL's choice where the row says NVLS_TREE
  ask $v "$data/hand.tuner" --nodes 2 --ranks 16 --unavailable NVLS,NVLS_TREE allreduce:4096 allreduce:0 &&
    printf 'allreduce 4096 nccl\nallreduce 0 TREE/LL 4\n' >"$tmp/want2" && same "$tmp/want2" "NVLS unavailable, v$v"
  # every row at its first, middle and last byte
  ask $v "$data/hand.tuner" --nodes 2 --ranks 16 --expect-table "$data/hand.tuner" &&
    check 'grep -q "^table: 5 rows for 2 nodes, 16 ranks checked" "$tmp/out"' "expect-table, v$v: $(cat "$tmp/out")"
done
ask 5 "$data/hand.tuner" --nodes 2 --ranks 16 allreduce:0
check 'grep -c "^log INFO: TUNER/topocoll: TOPOCOLL_TUNER_TABLE=.*: 5 of 6 rows for this communicator (2 nodes, 16 ranks)" "$tmp/log" | grep -qx 1' \
  "the load is one INFO line: $(cat "$tmp/log")"

# --- bad tables: success, NCCL's choice everywhere, one WARN line naming the file and line -----
printf 'allreduce 0 nccl\nallreduce 4096 nccl\nbroadcast 5 nccl\n' >"$tmp/want"
bad_table() {  # bad_table TABLE EXPECTED_WARNING_SUBSTRING
  for v in 2 3 4 5; do
    ask $v "$1" --nodes 2 --ranks 16 allreduce:0 allreduce:4096 broadcast:5 || continue
    same "$tmp/want" "$1, v$v"
    local warns
    warns=$(grep -c "^log WARN" "$tmp/log")
    if [ "$warns" -eq 1 ] && grep -q "^log WARN: .*$2" "$tmp/log"; then ok; else
      fail "$1, v$v: expected one WARN line with '$2', got: $(cat "$tmp/log")"
    fi
  done
}
bad_table "$tmp/no-such.tuner" "TOPOCOLL_TUNER_TABLE=$tmp/no-such.tuner: cannot open the file; the table is not used"
bad_table "$data/malformed.tuner" "malformed.tuner line 3: 7 fields, expected 8"
bad_table "$data/unknown-algorithm.tuner" "unknown-algorithm.tuner line 4: algorithm 'HALVING_DOUBLING': expected TREE, RING"
printf 'allreduce,0,65536,tree,simple,2,1,-1,-1,1\n' >"$tmp/example-format.conf"
bad_table "$tmp/example-format.conf" "line 1: expected the header line collective,min_bytes"
: >"$tmp/empty.tuner"
bad_table "$tmp/empty.tuner" "no header line"
# no table at all: one INFO line, no WARN
for v in 2 5; do
  ask $v unset --nodes 2 --ranks 16 allreduce:0 allreduce:4096 broadcast:5 && same "$tmp/want" "no table, v$v"
  check '[ "$(grep -c "^log" "$tmp/log")" = 1 ] && grep -q "TOPOCOLL_TUNER_TABLE is not set" "$tmp/log"' \
    "no table, v$v: $(cat "$tmp/log")"
done

# --- topocoll tune -> plugin: the choice topocoll sim prints ------------------------------
# compare_with_sim NAME NODES RANKS ALGORITHMS TOPOLOGY_FLAGS...: the fastest per size of `sim
# --format csv` (sizes with a tie for the fastest are left out; at least 3 must remain) is what
# the plugin answers at that size and one byte above, for every ABI version.
nccl_name() {
  case $1 in ring) echo RING ;; dbt) echo TREE ;; nvls) echo NVLS ;; nvls-tree) echo NVLS_TREE ;;
    collnet) echo COLLNET_DIRECT ;; *) echo "?$1" ;; esac
}
compare_with_sim() {
  local name=$1 nodes=$2 ranks=$3 algorithms=$4
  shift 4
  local sweep=(-b 1K -e 256M -f 4 --channels 8)
  if ! "$topocoll" tune "$@" --algorithm "$algorithms" "${sweep[@]}" -o "$tmp/$name.tuner" >"$tmp/summary" 2>"$tmp/err"; then
    fail "$name: topocoll tune: $(cat "$tmp/err")"; return
  fi
  if ! "$topocoll" sim "$@" --algorithm "$algorithms" "${sweep[@]}" --no-nccl-model --format csv >"$tmp/sim.csv" 2>"$tmp/err"; then
    fail "$name: topocoll sim: $(cat "$tmp/err")"; return
  fi
  # size -> algorithm/protocol of the strictly fastest (columns: 2 algorithm, 5 size, 10 time, 13 protocol)
  awk -F, 'NR > 1 { s = $5; t = $10 + 0
      if (!(s in best) || t < best[s]) { best[s] = t; pick[s] = $2 "/" toupper($13); tie[s] = 0 }
      else if (t == best[s]) tie[s] = 1 }
    END { for (s in best) if (!tie[s]) print s, pick[s] }' "$tmp/sim.csv" | sort -n >"$tmp/fastest"
  local n
  n=$(wc -l <"$tmp/fastest")
  check "[ $n -ge 3 ]" "$name: only $n sizes without a tie in sim's output"
  local queries=() want=""
  while read -r size pick; do
    local alg=${pick%/*} proto=${pick#*/}
    queries+=("allreduce:$size" "allreduce:$((size + 1))")
    want+="allreduce $size $(nccl_name "$alg")/$proto 8"$'\n'"allreduce $((size + 1)) $(nccl_name "$alg")/$proto 8"$'\n'
  done <"$tmp/fastest"
  printf '%s' "$want" >"$tmp/want"
  for v in 2 3 4 5; do
    ask $v "$tmp/$name.tuner" --nodes "$nodes" --ranks "$ranks" "${queries[@]}" && same "$tmp/want" "$name: tune vs sim, v$v"
    ask $v "$tmp/$name.tuner" --nodes "$nodes" --ranks "$ranks" --expect-table "$tmp/$name.tuner"
  done
  TEST_LIB_VERBOSE=1 ok "$name: $n sizes compared ($(tr '\n' ' ' <"$tmp/fastest"))"
}
compare_with_sim dgx-h100x1 1 8 ring,dbt,nvls --topology dgx-h100
compare_with_sim dgx-h100x2 2 16 ring,dbt,nvls-tree --topology dgx-h100 --nodes 2
compare_with_sim a100x4 4 32 ring,dbt --topology dgx-a100 --nodes 4 --fabric fat-tree

# the NCCL example tuner's format: the same rows, its column order and lower-case names
"$topocoll" tune --topology dgx-h100 --nodes 2 -b 1K -e 256M -f 4 -o "$tmp/ours.tuner" >/dev/null 2>&1
"$topocoll" tune --topology dgx-h100 --nodes 2 -b 1K -e 256M -f 4 --format nccl-example -o "$tmp/example.conf" \
  >/dev/null 2>&1
grep -v '^#' "$tmp/ours.tuner" | tail -n +2 | tr 'A-Z' 'a-z' >"$tmp/ours.rows"
grep -v '^#' "$tmp/example.conf" >"$tmp/out"
check '[ -s "$tmp/ours.rows" ]' "topocoll tune wrote no rows"
same "$tmp/ours.rows" "nccl-example rows"
check '! awk -F, "!/^#/ && NF != 8" "$tmp/example.conf" | grep -q .' "nccl-example: a row without 8 fields"
check '! awk "length > 255" "$tmp/example.conf" | grep -q .' "nccl-example: a line the example tuner cannot read whole"
# --format nccl-csv: the input NCCL's ext-tuner/example/scripts/optimize_config.py documents
# (collective,size_bytes,algorithm,protocol,channels,nodes,ranks,pipeOps,regBuff,bandwidth_gbps,
# latency_us), every simulated candidate a row. Read here as that script reads it (csv.DictReader,
# int/float fields, -1 for "any") and reduced the way its default metric does (lowest latency_us
# per size, the first of equal ones): the choice per size must be nccl-example's.
"$topocoll" tune --topology dgx-h100 --nodes 2 -b 1K -e 256M -f 4 --format nccl-csv -o "$tmp/sweep.csv" >/dev/null 2>&1
python3 - "$tmp/sweep.csv" "$tmp/example.conf" >"$tmp/out" 2>&1 <<'PY'
import csv, sys
cols = "collective,size_bytes,algorithm,protocol,channels,nodes,ranks,pipeOps,regBuff,bandwidth_gbps,latency_us"
rows = list(csv.DictReader(open(sys.argv[1])))
assert open(sys.argv[1]).readline().strip() == cols, "header"
best = {}
for r in rows:
    for k in ("size_bytes", "channels", "nodes", "ranks", "pipeOps", "regBuff"):
        int(r[k])
    lat, bw = float(r["latency_us"]), float(r["bandwidth_gbps"])
    assert lat > 0 and bw > 0, r
    key = (r["collective"], int(r["size_bytes"]))
    if key not in best or lat < float(best[key]["latency_us"]):
        best[key] = r
conf = [l.strip().split(",") for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
bad = 0
for (coll, size), r in sorted(best.items()):
    hit = [c for c in conf if c[0] == coll and int(c[1]) <= size <= int(c[2])]
    want = [r["algorithm"], r["protocol"], r["channels"]]
    if len(hit) != 1 or hit[0][3:6] != want:
        bad += 1
        print(f"{coll} {size}: csv best {want}, nccl-example {hit}")
sizes = len({k[1] for k in best})
print(f"rows {len(rows)} sizes {sizes} collectives {len({k[0] for k in best})} mismatches {bad}")
sys.exit(1 if bad or len(rows) <= sizes else 0)
PY
rc=$?
check '[ $rc -eq 0 ]' "nccl-csv against nccl-example: $(cat "$tmp/out")"
# without -o: the table on stdout, nothing else
"$topocoll" tune --topology dgx-h100 -b 1M -e 1M >"$tmp/out" 2>/dev/null
check '[ "$(grep -vc "^#" "$tmp/out")" = 2 ] && grep -q "^collective,min_bytes" "$tmp/out"' "tune to stdout: $(cat "$tmp/out")"

# --- bad input to topocoll tune: exit 2, one line ----------------------------------------
expect_error() {
  local want="$1"
  shift
  "$topocoll" tune "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$want" "$tmp/err"; then ok; else
    fail "topocoll tune $*: exit $rc, stderr: $(cat "$tmp/err") (expected '$want')"
  fi
}
expect_error "--format csv: expected topocoll, nccl-example or nccl-csv" --topology dgx-h100 --format csv
expect_error "hierarchical has no NCCL counterpart; expected some of ring (RING)" --topology dgx-h100 -a ring,hierarchical
expect_error "NCCL would not run collnet (COLLNET_DIRECT) on dgx-h100: NCCL's collNetSupport is off" --topology dgx-h100 \
  --nodes 2 -a collnet
expect_error "unknown algorithm 'rign'" --topology dgx-h100 -a rign
expect_error "--channels 0: expected nccl" --topology dgx-h100 --channels 0
expect_error "no candidate runs on dgx-h100 at 1024 B; nvls-tree: needs at least 2 nodes" --topology dgx-h100 \
  -a nvls-tree -b 1K -e 1K

summary tuner_plugin_test
