#!/usr/bin/env bash
# CTest script for topocoll-bench over the MPI transport: every allreduce algorithm and the
# MPI_Allreduce baseline with 2, 3, 4 and 8 ranks (oversubscribed on CI's 2 cores), small and odd
# sizes, a few dtypes / ops; #wrong must be 0 on every row and every run must exit 0. Then bad input.
# Usage: mpi_bench_test.sh BUILD_BIN_DIR
set -u
bin="$1/topocoll-bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { passed=$((passed + 1)); }
mpi=(mpirun --oversubscribe --allow-run-as-root)
[ "$(id -u)" = 0 ] || mpi=(mpirun --oversubscribe)

# run_ok NP BLOCKS ARGS...: exit 0, BLOCKS "Out of bounds values : 0 OK" footers, every data row
# with #wrong 0 out of place and in place, and at least one data row.
run_ok() {
  local np="$1" blocks="$2"; shift 2
  timeout 60 "${mpi[@]}" -np "$np" "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local what="-np $np $*"
  if [ "$rc" -ne 0 ]; then fail "$what: exit $rc: $(head -c 600 "$tmp/err")"; return; fi
  local oks rows bad
  oks=$(grep -c '^# Out of bounds values : 0 OK$' "$tmp/out")
  rows=$(grep -v '^#' "$tmp/out" | grep -vc 'not supported')
  bad=$(grep -v '^#' "$tmp/out" | grep -v 'not supported' | awk 'NF != 13 || $9 != "0" || $13 != "0"' | head -3)
  if [ "$oks" -ne "$blocks" ]; then fail "$what: $oks OK footers, expected $blocks"; return; fi
  if [ "$rows" -lt 1 ]; then fail "$what: no rows"; return; fi
  if [ -n "$bad" ]; then fail "$what: rows with #wrong != 0: $bad"; return; fi
  ok
}

small=(-b 8 -e 64K -f 4 -n 2 -w 1)
odd=(-b 4004 -e 4004 -n 2 -w 1)  # 1001 floats: splits unevenly over ranks and channels
for np in 2 3 4 8; do
  run_ok "$np" 5 -a all "${small[@]}"
  run_ok "$np" 5 -a all "${odd[@]}"
done
run_ok 3 5 -a all -b 7 -e 1003 -f 11 -n 1 -w 0 -d int8 -o max
run_ok 4 5 -a all -b 8 -e 8K -f 8 -n 1 -w 0 -d double -o prod --channels 3
run_ok 3 5 -a all -b 8 -e 8K -f 8 -n 1 -w 0 -d int32 -o avg
run_ok 2 5 -a all -b 2 -e 2002 -f 10 -n 1 -w 0 -d half -o sum      # mpi: no fp16 type, rows say so
run_ok 2 2 -a ring,mpi -b 3M -e 3M -n 1 -w 0 --slice 256K          # several slices in flight

# JSONL: one measured record per size and placement, wrong 0.
if timeout 60 "${mpi[@]}" -np 2 "$bin" -a ring,mpi -b 8 -e 1K -f 4 -n 1 -w 0 --format jsonl -O "$tmp/rec.jsonl" >"$tmp/out" 2>"$tmp/err"; then
  n=$(grep -c '"kind":"measured"' "$tmp/rec.jsonl")
  w=$(grep -c '"wrong":0' "$tmp/rec.jsonl")
  e=$(grep -c '"engine":"mpi"' "$tmp/rec.jsonl")
  if [ "$n" -eq 16 ] && [ "$w" -eq 16 ] && [ "$e" -eq 16 ]; then ok; else fail "jsonl: $n measured, $w wrong:0, $e engine mpi; expected 16"; fi
else
  fail "jsonl run: exit $?: $(head -c 300 "$tmp/err")"
fi

# Bad input: exit 2 and exactly one line (without mpirun: the whole stderr; under mpirun: rank 0's).
"$bin" -a ring,nosuch -b 8 -e 64 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "unknown allreduce algorithm 'nosuch'" "$tmp/err"; then ok
else fail "unknown algorithm: exit $rc, stderr: $(cat "$tmp/err")"; fi
timeout 60 "${mpi[@]}" -np 2 "$bin" -a nosuch >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(grep -c '^topocoll-bench: error' "$tmp/err")" -eq 1 ]; then ok
else fail "unknown algorithm under mpirun: exit $rc, stderr: $(cat "$tmp/err")"; fi
"$bin" --backend ucx >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]; then ok; else fail "--backend ucx: exit $rc, stderr: $(cat "$tmp/err")"; fi

echo "mpi-bench: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
