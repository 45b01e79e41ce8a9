#!/usr/bin/env bash
# CTest script: tools written for nccl-tests logs read `topocoll sim --format nccl-tests` and
# `topocoll-bench --format nccl-tests` unmodified, every row of every table (counted against the
# sweep): a grep of "# Avg bus bandwidth", AWS's nccl_to_csv.py and SuperBench's parser
# (tools/testdata/nccl-tests-parsers/, sources in its README). Then the nccl-tests flags the bench
# refuses (-g, -t, -a, -z, -N), NCCL_TESTS_MIN_BW (FAILED, exit 1), -J JSON, -i and -N.
# Usage: nccl_tests_parsers_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
bench="$1/topocoll-bench"
parsers="$(cd "$2" && pwd)/tools/testdata/nccl-tests-parsers"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
mpi_launcher

# aws LOG: the rows nccl_to_csv.py finds ("Found N performance data points"), run in $tmp.
aws() { (cd "$tmp" && python3 "$parsers/nccl_to_csv.py" "$1") | sed -n 's/^Found \([0-9]*\) performance data points$/\1/p'; }
# superbench LOG [--in-place]: the sizes SuperBench's parser adds a busbw result for; "invalid" when it refuses.
superbench() { python3 "$parsers/superbench_nccl_parser.py" "$@" 2>/dev/null | sed -n 's/^rows //p' || true; }
# avg_lines LOG: the "# Avg bus bandwidth" values, one a line (the grep cluster scripts use).
avg_lines() { grep '# Avg bus bandwidth' "$1" | awk '{print $6}'; }

# The simulator: ring, dbt and the nccl-model table, 9 sizes each (8 B to 512 KiB, x4).
sizes=9
for layout in current classic; do
  log="$tmp/sim-$layout.log"
  if "$bin" sim --topology pcie-8gpu --algorithm ring,dbt -b 8 -e 1M -f 4 --format nccl-tests \
    --nccl-tests-layout "$layout" >"$log" 2>"$tmp/err"; then
    ok
    check "[ \"\$(grep -c '^# topocoll algorithm: ' '$log')\" = 3 ]" "sim $layout: expected 3 tables (ring, dbt, nccl-model)"
    check "[ \"\$(avg_lines '$log' | grep -cE '^[0-9.]+(e[-+][0-9]+)?$')\" = 3 ]" \
      "sim $layout: grep of '# Avg bus bandwidth' read $(avg_lines "$log" | wc -l) values, expected 3"
    n=$(aws "$log")
    check "[ '$n' = $((3 * sizes)) ]" "sim $layout: nccl_to_csv.py read '$n' rows, expected $((3 * sizes))"
    # One stream of three tables: SuperBench reads the last (nccl-model) only.
    n=$(superbench "$log")
    check "[ '$n' = $sizes ]" "sim $layout: SuperBench read '$n' rows of the last table, expected $sizes"
  else
    fail "sim --format nccl-tests --nccl-tests-layout $layout: exit $?, $(head -c 300 "$tmp/err")"
  fi
done
# One file per algorithm: SuperBench reads every table, in place and out of place.
if "$bin" sim --topology pcie-8gpu --algorithm ring,dbt -b 8 -e 1M -f 4 --format nccl-tests \
  -O "$tmp/per-{algorithm}.log" >"$tmp/out" 2>"$tmp/err"; then
  check "[ ! -s '$tmp/out' ]" "sim -O pattern: expected nothing on stdout, got $(head -c 200 "$tmp/out")"
  for alg in ring dbt nccl-model; do
    f="$tmp/per-$alg.log"
    [ -f "$f" ] || { fail "sim -O per-{algorithm}.log: no $f"; continue; }
    check "[ \"\$(superbench '$f')\" = $sizes ]" "SuperBench on $alg's file: $(superbench "$f") rows, expected $sizes"
    check "[ \"\$(superbench '$f' --in-place)\" = $sizes ]" "SuperBench --in-place on $alg's file"
    check "[ \"\$(aws '$f')\" = $sizes ]" "nccl_to_csv.py on $alg's file: $(aws "$f") rows, expected $sizes"
    check "grep -q '^# Collective test starting: all_reduce_perf' '$f'" "$alg's file: no run header"
  done
else
  fail "sim -O per-{algorithm}.log: exit $?, $(head -c 300 "$tmp/err")"
fi
# Other collectives: the busbw factor, type and redop as nccl-tests prints them.
if "$bin" sim --topology pcie-8gpu --collective allgather --algorithm allgather-ring -b 64 -e 64 --format nccl-tests \
  --no-nccl-model >"$tmp/ag.log" 2>"$tmp/err"; then
  check "grep -qE '^ +64 +2 +float +none +-1 ' '$tmp/ag.log'" "allgather row: $(grep -E '^ +[0-9]' "$tmp/ag.log")"
  check "[ \"\$(aws '$tmp/ag.log')\" = 1 ]" "nccl_to_csv.py on the allgather table"
else
  fail "sim --collective allgather --format nccl-tests: exit $?, $(head -c 300 "$tmp/err")"
fi

# NCCL_TESTS_MIN_BW: below 0.9 x it the average line says FAILED and the run exits 1.
NCCL_TESTS_MIN_BW=1000000 "$bin" sim --topology pcie-8gpu --algorithm ring -b 1M -e 1M --format nccl-tests \
  --no-nccl-model >"$tmp/out" 2>"$tmp/err"
rc=$?
check "[ $rc = 1 ] && grep -qE '^# Avg bus bandwidth    : [0-9.e+-]+ FAILED$' '$tmp/out'" \
  "sim NCCL_TESTS_MIN_BW=1000000: exit $rc, $(grep 'Avg bus' "$tmp/out")"
NCCL_TESTS_MIN_BW=0.001 "$bin" sim --topology pcie-8gpu --algorithm ring -b 1M -e 1M --format nccl-tests \
  --no-nccl-model >"$tmp/out" 2>"$tmp/err"
rc=$?
check "[ $rc = 0 ] && grep -qE '^# Avg bus bandwidth    : [0-9.e+-]+ OK$' '$tmp/out'" \
  "sim NCCL_TESTS_MIN_BW=0.001: exit $rc, $(grep 'Avg bus' "$tmp/out")"
NCCL_TESTS_MIN_BW=fast "$bin" sim --topology pcie-8gpu --algorithm ring -b 1M -e 1M --format nccl-tests \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
check "[ $rc = 2 ] && [ \$(wc -l <'$tmp/err') = 1 ] && grep -q 'NCCL_TESTS_MIN_BW=fast: expected' '$tmp/err'" \
  "NCCL_TESTS_MIN_BW=fast: exit $rc, $(cat "$tmp/err")"
"$bin" sim --topology pcie-8gpu --format nccl-tests --nccl-tests-layout 2.9 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "[ $rc = 2 ] && grep -q -- '--nccl-tests-layout 2.9: expected current' '$tmp/err'" \
  "--nccl-tests-layout 2.9: exit $rc, $(cat "$tmp/err")"
# sim's -o is the op now (nccl-tests' -o), not a file.
"$bin" sim --topology pcie-8gpu --algorithm ring -b 1M -e 1M -o max --format csv --no-nccl-model >"$tmp/out" 2>"$tmp/err"
check "[ $? = 0 ] && grep -q ',max,' '$tmp/out' && [ ! -e max ]" "sim -o max: the op, $(head -c 200 "$tmp/err")"

# The bench's nccl-tests flags without a meaning here: one line, exit 2 (checked before MPI).
bad() {
  local want="$1"
  shift
  "$bench" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  check "[ $rc = 2 ] && [ \$(wc -l <'$tmp/err') = 1 ] && grep -q -- '$want' '$tmp/err'" \
    "bench $*: exit $rc, stderr $(cat "$tmp/err")"
}
bad "-g 2: expected 1: topocoll-bench runs one rank per process and GPU" -g 2
bad "-t 4: expected 1: topocoll-bench runs one thread per rank" -t 4
bad "-a 7: expected nccl-tests. average mode 0 (rank 0), 1 (average), 2 (minimum) or 3 (maximum)" -a 7
bad "-z 0: expected 1" -z 0
bad "-N 0: expected 1 or more cycles" -N 0
bad "-i 8 with -f 2: expected one of them" -i 8 -f 2
bad "-J out.json: 2 algorithms: expected a name holding {algorithm}" --algorithm ring,mpi -J out.json
NCCL_TESTS_MIN_BW=fast bad "NCCL_TESTS_MIN_BW=fast: expected a bus bandwidth" --format nccl-tests

# A measured run, 4 ranks: ring and mpi, 5 sizes each (8 B to 32 KiB, x8), checked (#wrong 0).
bsizes=5
run_bench() { timeout 120 "${mpi[@]}" -np "$1" "$bench" "${@:2}"; }
if run_bench 4 --algorithm ring,mpi -b 8 -e 64K -f 8 -n 2 -w 1 --format nccl-tests -J "$tmp/bench-{algorithm}.json" \
  >"$tmp/bench.log" 2>"$tmp/err"; then
  ok
  check "[ \"\$(avg_lines '$tmp/bench.log' | grep -cE '^[0-9.]+(e[-+][0-9]+)?$')\" = 2 ]" "bench: expected 2 average lines"
  n=$(aws "$tmp/bench.log")
  check "[ '$n' = $((2 * bsizes)) ]" "bench: nccl_to_csv.py read '$n' rows, expected $((2 * bsizes))"
  check "[ \"\$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1 .* 0 *$' '$tmp/bench.log')\" = $((2 * bsizes)) ]" \
    "bench: expected $((2 * bsizes)) rows with #wrong 0"
  check "[ \"\$(superbench '$tmp/bench.log')\" = $bsizes ]" "bench: SuperBench read the last table's $bsizes rows"
  for alg in ring mpi; do
    check "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d[\"results\"]; \
assert d[\"version\"] == 2 and len(r) == $bsizes and r[0][\"root\"] == \"    -1\" and r[0][\"experiment_name\"] == sys.argv[2]; \
assert all(x[\"out_of_place\"][\"nwrong\"] == 0 and x[\"in_place\"][\"nwrong\"] == 0 for x in r); \
assert d[\"out_of_bounds\"] == {\"count\": 0, \"okay\": \"true\"} and d[\"average_bus_bandwidth\"][\"okay\"] == \"unchecked\"; \
assert len(d[\"config\"][\"devices\"]) == 4' '$tmp/bench-$alg.json' $alg" "bench -J: $alg's JSON document"
  done
else
  fail "bench --format nccl-tests: exit $?, $(head -c 400 "$tmp/err")"
fi
# One file per algorithm: SuperBench reads both.
if run_bench 2 --algorithm ring,mpi -b 8 -e 64K -f 8 -n 1 -w 0 --format nccl-tests --nccl-tests-layout classic \
  -O "$tmp/b-{algorithm}.log" >"$tmp/out" 2>"$tmp/err"; then
  for alg in ring mpi; do
    check "[ \"\$(superbench '$tmp/b-$alg.log')\" = $bsizes ]" "bench classic, SuperBench on $alg's file"
    check "[ \"\$(aws '$tmp/b-$alg.log')\" = $bsizes ]" "bench classic, nccl_to_csv.py on $alg's file"
  done
else
  fail "bench -O b-{algorithm}.log: exit $?, $(head -c 400 "$tmp/err")"
fi
# -i (linear steps), -N (cycles), -a (nccl-tests' average mode): the rows they say.
if run_bench 2 --algorithm ring -b 8 -e 64 -i 8 -N 2 -a 3 -n 1 -w 0 --format nccl-tests >"$tmp/lin.log" 2>"$tmp/err"; then
  check "[ \"\$(aws '$tmp/lin.log')\" = 16 ]" "bench -b 8 -e 64 -i 8 -N 2: $(aws "$tmp/lin.log") rows, expected 8 sizes x 2 cycles"
  check "grep -q 'step: 8(bytes)' '$tmp/lin.log'" "bench -i 8: the header says step: 8(bytes)"
  check "grep -q 'combined over ranks as -a says' '$tmp/lin.log'" "bench -a 3: the header names the time"
else
  fail "bench -i 8 -N 2 -a 3: exit $?, $(head -c 400 "$tmp/err")"
fi
# NCCL_TESTS_MIN_BW above what a CPU run reaches: FAILED and a non-zero exit.
NCCL_TESTS_MIN_BW=1000000 run_bench 2 --algorithm ring -b 1K -e 1K -n 1 -w 0 --format nccl-tests >"$tmp/out" 2>"$tmp/err"
rc=$?
check "[ $rc != 0 ] && grep -qE '^# Avg bus bandwidth    : [0-9.e+-]+ FAILED$' '$tmp/out'" \
  "bench NCCL_TESTS_MIN_BW=1000000: exit $rc, $(grep 'Avg bus' "$tmp/out")"

summary nccl_tests_parsers_test
