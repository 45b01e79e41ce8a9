#!/usr/bin/env bash
# CTest script: faults of an MPI job. Never a hang, never a silent wrong answer.
#   Disagreement (default mpirun; refused by the agreement step before any data moves: exit 2,
#   one line on rank 0, no table row): ranks given different --topology (the repro fixture
#   tests/repros/faults/rank1-topology-wrapper.sh), -e, -d, -a; one rank's own bad input; a
#   topology file that differs per rank (the job's topology agreement); the probe's call check.
#   Faults the launcher does not handle (`mpirun --enable-recovery`: mpirun kills nobody): a rank
#   killed (SIGKILL), stopped (SIGSTOP) or slowed (its main thread asleep beyond the timeout) in
#   topocoll's ring and in the mpi baseline (and the UCX ring when built; the shm ring and dbt,
#   with no shared segment left in /dev/shm). Every survivor must exit non-zero within the progress
#   timeout + 10 s of the fault, its error line naming the rank and what is wrong with it.
#   With mpirun's default abort: a killed rank ends the job too (mpirun names it).
# Each mpirun is bounded by `timeout`; the time from the fault to the last survivor's exit is
# printed for every case.
# Usage: fault_test.sh BUILD_BIN_DIR
set -u
bindir="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
TEST_LIB_VERBOSE=1
# shellcheck source=tools/test_lib.sh
source "$here/test_lib.sh"
mpi_launcher
bench="$bindir/topocoll-bench"
timeout_s=3
budget=$((timeout_s + 10))
t0=$(date +%s)

# --- Disagreement -------------------------------------------------------------------------------
# Per-rank arguments: rank R appends $ARGS_R (word-split) to the command.
cat >"$tmp/args.sh" <<'EOS'
#!/bin/bash
v="ARGS_$OMPI_COMM_WORLD_RANK"
# shellcheck disable=SC2086
exec "$@" ${!v:-}
EOS
chmod +x "$tmp/args.sh"

# refused NAME PATTERN MPIRUN-ARGS...: exit 2 within 30 s, exactly one error line (rank 0's)
# matching PATTERN, no table row, no "OK" footer.
refused() {
  local name="$1" pattern="$2"
  shift 2
  local start end rc
  start=$(date +%s.%N)
  timeout 30 "${mpi[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  end=$(date +%s.%N)
  local secs lines rows
  secs=$(awk -v a="$end" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
  lines=$(grep -c '^topocoll-bench: error' "$tmp/err")
  rows=$(grep -c '^ *[0-9]\|OK$' "$tmp/out")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [ "$rows" -eq 0 ] && grep -q "^topocoll-bench: error: $pattern" "$tmp/err"; then
    ok "$name: refused in $secs s: $(grep '^topocoll-bench: error' "$tmp/err" | head -c 300)"
  else
    fail "$name: exit $rc after $secs s, $lines error lines, $rows table rows: $(head -c 800 "$tmp/err")"
  fi
}

small=(--algorithm ring -b 1K -e 4K -n 3 -w 1 --timeout 10)
refused "different --topology (repro rank1-topology-wrapper.sh)" \
  'ranks disagree on the command line: --topology: rank 0: (detected from MPI); rank 1: pcie-8gpu: expected the same on every rank' \
  -np 2 "$here/../tests/repros/faults/rank1-topology-wrapper.sh" "$bench" --backend mpi "${small[@]}"
refused "different -e" \
  'ranks disagree on the command line: the sizes in bytes (-b, -e, -f): rank 0: 1024,2048,4096; rank 1: 1024,2048,4096,8192: expected' \
  -np 2 -x ARGS_0="-e 4K" -x ARGS_1="-e 8K" "$tmp/args.sh" "$bench" --algorithm ring -b 1K -n 3 -w 1
refused "different -d" \
  'ranks disagree on the command line: --datatype: ranks 0,2: float; rank 1: int32: expected' \
  -np 3 -x ARGS_1="-d int32" "$tmp/args.sh" "$bench" "${small[@]}"
refused "different -a" \
  'ranks disagree on the command line: --algorithm: rank 0: ring,mpi; rank 1: dbt,mpi: expected' \
  -np 2 -x ARGS_0="--algorithm ring,mpi" -x ARGS_1="--algorithm dbt,mpi" "$tmp/args.sh" "$bench" -b 1K -e 4K -n 3 -w 1
refused "bad input on rank 1 only" \
  'input error on rank 1 (of 2; the others. input was valid): -n 0: expected at least 1 iteration' \
  -np 2 -x ARGS_1="-n 0" "$tmp/args.sh" "$bench" --algorithm ring -b 1K -e 4K -w 1

# The same --topology path, another file behind it on rank 1 (each rank in its own folder).
for r in 0 1 2 3 4 5 6 7; do
  mkdir -p "$tmp/top/r$r"
  printf 'name: box\nnode: pcie-8gpu\nnodes: 1\n' >"$tmp/top/r$r/topo.yaml"
done
printf 'name: box\nnode: dgx-a100\nnodes: 1\n' >"$tmp/top/r1/topo.yaml"
cat >"$tmp/cd.sh" <<EOS
#!/bin/bash
cd "$tmp/top/r\$OMPI_COMM_WORLD_RANK" && exec "\$@"
EOS
chmod +x "$tmp/cd.sh"
refused "same --topology path, different file on rank 1" \
  "ranks disagree on the job's topology: its layout: ranks 0,2,3,4,5,6,7: .*; rank 1: .*: expected the same on every rank" \
  -np 8 "$tmp/cd.sh" "$bench" --algorithm ring -b 1K -e 1K -n 1 -w 0 --topology topo.yaml
printf 'node: [\n' >"$tmp/top/r1/topo.yaml"
refused "same --topology path, broken file on rank 1" \
  "input errors\? on ranks\? .*1.*(of 8" \
  -np 8 "$tmp/cd.sh" "$bench" --algorithm ring -b 1K -e 1K -n 1 -w 0 --topology topo.yaml

# The probe's call check (check_same_call), and the transport's size check without it.
timeout 60 "${mpi[@]}" -np 3 "$bindir/mpi_fault_probe" checked >"$tmp/out" 2>"$tmp/err"
rc=$?
n=$(grep -c 'error: ranks disagree on the collective call: ranks 0,2: allreduce 1000 float sum ring.*; ranks 1: allreduce 1001 float sum ring' "$tmp/err")
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$n" -eq 3 ]; then ok "different counts, checked: every rank names both calls"
else fail "different counts, checked: exit $rc, $n of 3 ranks named both calls: $(head -c 600 "$tmp/err")"; fi
timeout 60 "${mpi[@]}" -np 3 "$bindir/mpi_fault_probe" unchecked >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'bytes, expected .*the ranks disagree on the collective' "$tmp/err" &&
   ! grep -q 'completed' "$tmp/err"; then ok "different counts, unchecked: the size check stops the job"
else fail "different counts, unchecked: exit $rc: $(head -c 600 "$tmp/err")"; fi

# --- A killed rank, mpirun's default abort ------------------------------------------------------
ring=("$bench" --algorithm ring -b 4M -e 4M -n 100000 -w 0 -c 0)
start=$(date +%s.%N)
TOPOCOLL_TEST_KILL=1:1500 timeout 60 "${mpi[@]}" -x TOPOCOLL_TEST_KILL -np 4 "${ring[@]}" --timeout $timeout_s >"$tmp/out" 2>"$tmp/err"
rc=$?
fault=$(sed -n 's/^topocoll test fault: rank 1: .* at \([0-9.]*\)$/\1/p' "$tmp/err" | head -1)
secs=$(awk -v a="$(date +%s.%N)" -v b="${fault:-$start}" 'BEGIN { printf "%.1f", a - b }')
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'rank 1 .*\(exited on signal 9\|no longer running\)' "$tmp/err" &&
   awk -v s="$secs" -v b="$budget" 'BEGIN { exit !(s < b) }'; then ok "killed rank, default mpirun: exit $rc, ended $secs s after the kill, rank 1 named"
else fail "killed rank, default mpirun: exit $rc after $secs s: $(head -c 800 "$tmp/err")"; fi

# --- Faults the launcher does not handle (mpirun --enable-recovery) -----------------------------
# Each rank runs under rank.sh: its pid and, at its end, "EXIT-STATUS EPOCH" in files (mpirun's own
# exit status is 0 in recovery mode).
cat >"$tmp/rank.sh" <<EOS
#!/bin/bash
"\$@" &
p=\$!
echo \$p > "$tmp/pid.\$OMPI_COMM_WORLD_RANK"
wait \$p
echo "\$? \$(date +%s.%N)" > "$tmp/rc.\$OMPI_COMM_WORLD_RANK"
EOS
chmod +x "$tmp/rank.sh"

# recovery NAME NP VICTIM PATTERN ENV-ASSIGNMENT [-e PATTERN2] -- BENCH-ARGS...: rank VICTIM is hit
# by the fault ENV-ASSIGNMENT (TOPOCOLL_TEST_KILL / _STALL); every other rank must exit non-zero
# within the timeout + 10 s of the fault, its error line naming "rank VICTIM (pid ...) PATTERN";
# PATTERN2, when given, must be on at least one survivor's line. The victim is then killed.
recovery() {
  local name="$1" np="$2" victim="$3" pattern="$4" env="$5"
  shift 5
  local also=""
  if [ "$1" = -e ]; then also="$2"; shift 2; fi
  [ "$1" = -- ] && shift
  rm -f "$tmp"/rc.* "$tmp"/pid.*
  local var="${env%%=*}"
  env "$env" TOPOCOLL_TIMEOUT=$timeout_s timeout 60 "${mpi[@]}" --enable-recovery -x "$var" -x TOPOCOLL_TIMEOUT \
    -np "$np" "$tmp/rank.sh" "$@" >"$tmp/out" 2>"$tmp/err" &
  local job=$!
  # Wait for every survivor's status (at most 40 s), then end the victim (stopped, or asleep).
  local r n waited=0
  while [ "$waited" -lt 400 ]; do
    n=0
    for ((r = 0; r < np; r++)); do [ "$r" = "$victim" ] || [ -e "$tmp/rc.$r" ] && n=$((n + 1)); done
    [ "$n" -eq "$np" ] && break
    sleep 0.1
    waited=$((waited + 1))
  done
  [ -e "$tmp/pid.$victim" ] && kill -KILL "$(cat "$tmp/pid.$victim")" 2>/dev/null
  wait "$job"
  local rc=$?
  local fault last=0 good=0 bad="" code when line
  fault=$(sed -n "s/^topocoll test fault: rank $victim: .* at \([0-9.]*\)\$/\1/p" "$tmp/err" | head -1)
  for ((r = 0; r < np; r++)); do
    [ "$r" = "$victim" ] && continue
    read -r code when <"$tmp/rc.$r" 2>/dev/null || { code=none; when=0; }
    line=$(grep "^topocoll-bench: error: rank $r: " "$tmp/err" | head -1)
    if [ "$code" != none ] && [ "$code" -ne 0 ] &&
       echo "$line" | grep -q "rank $victim (pid [0-9]* on [^)]*) $pattern"; then
      good=$((good + 1))
    else
      bad="$bad rank $r: exit $code: ${line:-(no error line)};"
    fi
    last=$(awk -v a="$when" -v b="$last" 'BEGIN { print (a > b ? a : b) }')
  done
  local secs
  secs=$(awk -v a="$last" -v b="${fault:-0}" 'BEGIN { printf "%.1f", a - b }')
  if [ -n "$also" ] && ! grep "^topocoll-bench: error: rank" "$tmp/err" | grep -q "$also"; then
    bad="$bad no survivor's line has '$also';"
  fi
  if [ "$rc" -ne 124 ] && [ -n "$fault" ] && [ "$good" -eq $((np - 1)) ] && [ -z "$bad" ] &&
     awk -v s="$secs" -v b="$budget" 'BEGIN { exit !(s >= 0 && s < b) }'; then
    ok "$name: the $good survivors exited non-zero naming rank $victim, the last $secs s after the fault: $(grep "^topocoll-bench: error: rank" "$tmp/err" | grep -v "rank $victim: " | tail -1 | head -c 400)"
  else
    fail "$name: $good of $((np - 1)) survivors named rank $victim (mpirun exit $rc, fault at ${fault:-?}, last $secs s after):$bad $(grep -v '^topocoll-bench' "$tmp/err" | head -c 600)"
  fi
}

# The ring: 4 MiB allreduces, each a few ms: the fault lands inside one, or between two.
recovery "killed rank, ring" 4 1 "is no longer running" TOPOCOLL_TEST_KILL=1:1500 -- "${ring[@]}"
recovery "stopped rank, ring" 4 1 "is stopped" TOPOCOLL_TEST_KILL=1:1500:STOP -- "${ring[@]}"
recovery "slowed rank, ring" 4 1 "has not waited in topocoll for" TOPOCOLL_TEST_STALL=1:1500:30000 -- "${ring[@]}"
# The mpi baseline: warmup runs back to back (no barrier between them), so every survivor is in
# MPI_Iallreduce when the fault lands; its line names the baseline and the timeout.
mpib=("$bench" --algorithm mpi -b 4M -e 4M -n 1 -w 1000000 -c 0)
recovery "killed rank, mpi baseline" 3 1 "is no longer running" TOPOCOLL_TEST_KILL=1:1500 \
  -e "the mpi baseline (MPI_Iallreduce) at 4194304 B: no progress for 3000 ms" -- "${mpib[@]}"
recovery "stopped rank, mpi baseline" 3 1 "is stopped" TOPOCOLL_TEST_KILL=1:1500:STOP \
  -e "the mpi baseline (MPI_Iallreduce) at 4194304 B: no progress for 3000 ms" -- "${mpib[@]}"
recovery "slowed rank, mpi baseline" 3 1 "has not waited in topocoll for" TOPOCOLL_TEST_STALL=1:1500:30000 \
  -e "the mpi baseline (MPI_Iallreduce) at 4194304 B: no progress for 3000 ms" -- "${mpib[@]}"

# The UCX transport, when built (its own waits beat the board too).
if ! "$bench" --backend ucx -n 0 2>&1 | grep -q 'built without UCX'; then
  ucx=("$bench" --backend ucx --algorithm ring -b 4M -e 4M -n 100000 -w 0 -c 0)
  recovery "killed rank, ucx ring" 3 1 "is no longer running" TOPOCOLL_TEST_KILL=1:1500 -- "${ucx[@]}"
  recovery "stopped rank, ucx ring" 3 1 "is stopped" TOPOCOLL_TEST_KILL=1:1500:STOP -- "${ucx[@]}"
fi

# The direct intra-node path (--backend shm): the survivors wait on the dead rank's ring and end
# as above. Its shared segments (/dev/shm/topocoll-shm-PID-NONCE-*, PID: rank 0's) are unlinked
# as soon as every rank of the node has mapped them, so a killed or stopped rank leaves none.
shm=("$bench" --backend shm --algorithm ring -b 4M -e 4M -n 100000 -w 0 -c 0)
shm_left() {  # the job's segments still in /dev/shm, named after rank 0's pid
  [ -e "$tmp/pid.0" ] || { echo "(no pid of rank 0)"; return; }
  ls /dev/shm | grep "^topocoll-shm-$(cat "$tmp/pid.0")-"
}
recovery "killed rank, shm ring" 4 1 "is no longer running" TOPOCOLL_TEST_KILL=1:1500 -- "${shm[@]}"
left=$(shm_left)
check '[ -z "$left" ]' "killed rank, shm ring: left in /dev/shm: $left"
recovery "stopped rank, shm ring" 3 1 "is stopped" TOPOCOLL_TEST_KILL=1:1500:STOP -- "${shm[@]}"
left=$(shm_left)
check '[ -z "$left" ]' "stopped rank, shm ring: left in /dev/shm: $left"
recovery "killed rank, shm dbt (many sends in flight)" 4 2 "is no longer running" TOPOCOLL_TEST_KILL=2:1500 -- \
  "$bench" --backend shm --algorithm dbt -b 1M -e 1M -n 100000 -w 0 -c 0 --slice 64K --channels 4
left=$(shm_left)
check '[ -z "$left" ]' "killed rank, shm dbt: left in /dev/shm: $left"

echo "fault-test: $(($(date +%s) - t0)) s"
summary fault-test
