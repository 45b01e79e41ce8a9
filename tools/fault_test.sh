#!/usr/bin/env bash
# CTest script: faults under mpirun (issue 5, part 4). Never a hang, never a silent wrong answer.
#   1. ranks that disagree on the count, with the call check: every rank names both signatures
#   2. the same without the check: the transport's size check ends the job with an error
#   3. a rank killed inside a collective (TOPOCOLL_TEST_KILL), default mpirun: the job ends
#      non-zero within the progress timeout + 10 s and the dead rank is named
#   4. the same with `mpirun --enable-recovery` (mpirun does not kill the others): every surviving
#      rank stops on its own progress timeout, exits non-zero and names the dead rank
# Usage: fault_test.sh BUILD_BIN_DIR
set -u
bindir="$1"
TEST_LIB_VERBOSE=1
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
mpi=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

# 1. Different counts, checked: 3 ranks, 3 identical error lines naming both groups; exit non-zero.
timeout 60 "${mpi[@]}" -np 3 "$bindir/mpi_fault_probe" checked >"$tmp/out" 2>"$tmp/err"
rc=$?
n=$(grep -c 'error: ranks disagree on the collective call: ranks 0,2: allreduce 1000 float sum ring.*; ranks 1: allreduce 1001 float sum ring' "$tmp/err")
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$n" -eq 3 ]; then ok "different counts, checked: every rank names both calls"
else fail "different counts, checked: exit $rc, $n of 3 ranks named both calls: $(head -c 600 "$tmp/err")"; fi

# 2. Different counts, unchecked: an error about the message size, the job ends non-zero.
timeout 60 "${mpi[@]}" -np 3 "$bindir/mpi_fault_probe" unchecked >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'bytes, expected .*the ranks disagree on the collective' "$tmp/err" &&
   ! grep -q 'completed' "$tmp/err"; then ok "different counts, unchecked: the size check stops the job"
else fail "different counts, unchecked: exit $rc: $(head -c 600 "$tmp/err")"; fi

# 3. and 4.: rank 1 of 4 kills itself 1.5 s into a long run of 4 MiB ring allreduces (each a few
# ms: it dies inside one, or between two with the others already inside the next).
bench=("$bindir/topocoll-bench" -a ring -b 4M -e 4M -n 100000 -w 0 -c 0)
budget=13  # the progress timeout (3 s) + 10 s

start=$(date +%s.%N)
TOPOCOLL_TEST_KILL=1:1500 timeout 60 "${mpi[@]}" -x TOPOCOLL_TEST_KILL -np 4 "${bench[@]}" --timeout 3 >"$tmp/out" 2>"$tmp/err"
rc=$?
secs=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b - 1.5 }')
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'rank 1 .*\(exited on signal 9\|no longer running\)' "$tmp/err" &&
   awk -v s="$secs" -v b="$budget" 'BEGIN { exit !(s < b) }'; then ok "killed rank, default mpirun: exit $rc, ended $secs s after the kill, rank 1 named"
else fail "killed rank, default mpirun: exit $rc after $secs s: $(head -c 800 "$tmp/err")"; fi

# Recovery mode: mpirun's own exit status is 0 there, so each rank's is written to a file.
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
"\$@"
echo \$? > "$tmp/rc.\$OMPI_COMM_WORLD_RANK"
EOF
chmod +x "$tmp/rank.sh"
start=$(date +%s.%N)
# (the timeout from the environment here: TOPOCOLL_TIMEOUT=3 instead of --timeout 3)
TOPOCOLL_TIMEOUT=3 TOPOCOLL_TEST_KILL=1:1500 timeout 60 "${mpi[@]}" --enable-recovery -x TOPOCOLL_TEST_KILL -x TOPOCOLL_TIMEOUT \
  -np 4 "$tmp/rank.sh" "${bench[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
secs=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b - 1.5 }')
good=0
for r in 0 2 3; do
  code=$(cat "$tmp/rc.$r" 2>/dev/null || echo none)
  if [ "$code" != none ] && [ "$code" -ne 0 ] && grep -q "rank $r: .*rank 1 (pid [0-9]* on .*) is no longer running" "$tmp/err"; then
    good=$((good + 1))
  fi
done
if [ "$rc" -ne 124 ] && [ "$good" -eq 3 ] && [ "$(cat "$tmp/rc.1" 2>/dev/null)" = 137 ] && awk -v s="$secs" -v b="$budget" 'BEGIN { exit !(s < b) }'; then
  ok "killed rank, --enable-recovery: ranks 0, 2, 3 exited non-zero naming rank 1, $secs s after the kill"
else
  fail "killed rank, --enable-recovery: $good of 3 survivors exited non-zero naming rank 1 (mpirun exit $rc, $secs s): $(head -c 1200 "$tmp/err")"
fi

summary fault-test
