#!/usr/bin/env bash
# CTest script for what topocoll-bench says about its results against MPI:
# - 8-bit sums: Open MPI's MPI_SUM saturates in its vectorised loop where nccl-tests' inputs
#   expect wrapping (runtime/bench/mpi_arithmetic.hpp). The mpi block then carries one line saying
#   so, its #wrong is counted against that arithmetic (0, exit 0), and topocoll's algorithms still
#   wrap (#wrong 0 against nccl-tests' values). 2 ranks (exact), 3 (a range), 4 at 1 MiB (MPI's
#   ring), int8 and uint8; int32 sums wrap in MPI too: no such line.
# - the summary against mpi after the table: one comment line per size, only with mpi and a
#   topocoll algorithm, never in --format jsonl or nccl-tests.
# Usage: bench_output_test.sh BUILD_BIN_DIR
set -u
bin="$1/topocoll-bench"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
bench_backends "$bin"
launch_for mpi

# run NP ARGS...: the bench's table into $tmp/out; its exit status.
run() {
  local np="$1"; shift
  timeout 120 "${launch[@]}" -np "$np" "$bin" --backend mpi "$@" >"$tmp/out" 2>"$tmp/err"
}

# saturating NP DTYPE ARGS...: exit 0, two "0 OK" footers, #wrong 0 on every row, one line on MPI's sums.
saturating() {
  local np="$1" dtype="$2"; shift 2
  local what="-np $np -d $dtype -o sum $*"
  run "$np" --algorithm ring,mpi -n 1 -w 0 -d "$dtype" -o sum "$@"
  local rc=$?
  if [ "$rc" -ne 0 ]; then fail "$what: exit $rc: $(grep -v '^ ' "$tmp/out" | grep -i 'wrong\|FAILED' | head -3) $(head -c 300 "$tmp/err")"; return; fi
  local oks lines bad
  oks=$(grep -c '^# Out of bounds values : 0 OK$' "$tmp/out")
  lines=$(grep -c "^# mpi: Open MPI v[0-9.]*'s MPI_SUM on $dtype, asked with MPI_Reduce_local, saturates in its vectorised loop" "$tmp/out")
  bad=$(grep -v '^#' "$tmp/out" | awk 'NF != 13 || $9 != "0" || $13 != "0"' | head -3)
  if [ "$oks" -ne 2 ]; then fail "$what: $oks OK footers, expected 2"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines about MPI's saturating sums, expected 1"; return; fi
  if [ -n "$bad" ]; then fail "$what: rows with #wrong != 0: $bad"; return; fi
  ok
}

if mpirun --version 2>/dev/null | grep -q "Open MPI"; then
  saturating 2 int8 -b 7 -e 100K -f 11   # 7 elements (scalar loop only) ... 9317 (vectors and a tail)
  saturating 3 int8 -b 7 -e 100K -f 11
  saturating 4 int8 -b 1M -e 1M          # MPI_Iallreduce's ring on 4 ranks: saturated blocks per step
  saturating 2 uint8 -b 7 -e 10K -f 11
else
  echo "bench-output: not Open MPI: its saturating 8-bit sums are not checked"
fi
run 2 --algorithm ring,mpi -b 8 -e 8K -f 8 -n 1 -w 0 -d int32 -o sum
rc=$?
check '[ "$rc" -eq 0 ] && ! grep -q "^# mpi: .*MPI_SUM" "$tmp/out"' "int32 sums: exit $rc, expected 0 and no line on MPI's sums: $(grep '^# mpi' "$tmp/out")"

# The summary: a header, the column lines, one row per size (4 sizes here) naming a topocoll algorithm.
run 2 --algorithm ring,dbt,mpi -b 8 -e 512 -f 4 -n 2 -w 0
rc=$?
# (its lines are comments, so that the table's readers take them for none of its rows)
rows=$(awk '/^# summary against mpi \(MPI_Iallreduce\)/ {on = 1; next} on && /^# +[0-9]+ / {sub(/^# /, ""); print; next} on && /^#$/ {on = 0}' "$tmp/out")
check '[ "$rc" -eq 0 ] && [ "$(printf "%s\n" "$rows" | grep -c .)" -eq 4 ] && [ -z "$(printf "%s\n" "$rows" | awk '"'"'NF != 9 || ($2 != "ring" && $2 != "dbt") || ($6 != "ring" && $6 != "dbt")'"'"')" ]' \
  "summary with ring,dbt,mpi: exit $rc, rows: $rows"
sizes=$(printf "%s\n" "$rows" | awk '{print $1}' | tr '\n' ' ')
check '[ "$sizes" = "8 32 128 512 " ]' "summary sizes: '$sizes', expected '8 32 128 512 '"
run 2 --algorithm ring -b 8 -e 512 -f 4 -n 1 -w 0
check '! grep -q "^# summary" "$tmp/out"' "summary without mpi: $(grep '^# summary' "$tmp/out")"
run 2 --algorithm ring,mpi -b 8 -e 512 -f 4 -n 1 -w 0 --format jsonl
check '! grep -q "summary" "$tmp/out" && [ "$(grep -c "^{" "$tmp/out")" -eq 16 ]' "summary in --format jsonl: $(head -c 300 "$tmp/out")"
run 2 --algorithm ring,mpi -b 8 -e 512 -f 4 -n 1 -w 0 --format nccl-tests
check '! grep -q "summary" "$tmp/out" && grep -q "^# Avg bus bandwidth" "$tmp/out"' "summary in --format nccl-tests: $(grep summary "$tmp/out")"

summary bench-output
