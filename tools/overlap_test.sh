#!/usr/bin/env bash
# topocoll-bench --overlap over each backend it was built with: the overlap table names every
# algorithm at every size with finite figures, the run still checks bit for bit, and the flag's
# misuse is one line and exit 2.
# Usage: overlap_test.sh BUILD_BIN_DIR
set -u
bin="$1/topocoll-bench"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
bench_backends "$bin"

for backend in "${backends[@]}"; do
  launch_for "$backend"
  timeout 120 "${launch[@]}" -np 2 "$bin" --backend "$backend" --algorithm ring,dbt,mpi -b 64K -e 1M -f 4 -n 3 -w 1 \
    --overlap --timeout 30 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check '[ $rc -eq 0 ]' "$backend --overlap: exit $rc: $(tail -c 400 "$tmp/err")"
  check 'grep -q "^# Overlap (--overlap): out of place" "$tmp/out"' "$backend: no overlap table: $(tail -c 600 "$tmp/out")"
  check '[ "$(grep -c "Out of bounds values : 0 OK" "$tmp/out")" = 3 ]' "$backend: every block checked with 0 wrong"
  # 3 algorithms x 3 sizes (64K, 256K, 1M): a row each, with four numbers.
  rows=$(grep -cE '^# +(ring|dbt|mpi) +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +-?[0-9.]+$' "$tmp/out")
  check '[ "$rows" = 9 ]' "$backend: $rows overlap rows, expected 9: $(grep -A12 '^# Overlap' "$tmp/out")"
  for a in ring dbt mpi; do
    check 'grep -qE "^# +$a +1048576 " "$tmp/out"' "$backend: no overlap row for $a at 1 MiB"
  done
  # The efficiency is the row's own figures in the formula (P + C - W) / min(P, C), to print precision
  # (times to 0.1 us: 1 % of 1 + |efficiency|).
  check '! grep -E "^# +(ring|dbt|mpi) +[0-9]+ " "$tmp/out" | awk "{ c = \$4; p = \$5; w = \$6; m = c < p ? c : p;
      e = (p + c - w) / m; d = e - \$7; t = 0.01 * (1 + (e < 0 ? -e : e)); if (d > t || -d > t) bad = 1 }
      END { exit !bad }"' \
    "$backend: an efficiency that is not (P + C - W) / min(P, C) of its row: $(grep -A12 '^# Overlap' "$tmp/out")"
done

# Misuse: one line, exit 2 (checked before MPI starts: no mpirun needed).
"$bin" --overlap --rounds --algorithm ring >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^.*--overlap with --rounds: expected --backend mpi, ucx or shm without --rounds" "$tmp/err"' \
  "--overlap --rounds: exit $rc: $(cat "$tmp/err")"
"$bin" --overlap --format jsonl --algorithm ring >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "overlap with --format jsonl: expected --format table" "$tmp/err"' \
  "--overlap --format jsonl: exit $rc: $(cat "$tmp/err")"

summary overlap_test
