#!/usr/bin/env bash
# CTest script for the direct intra-node path (topocoll-bench --backend shm, runtime/
# shm_transport.hpp): every allreduce algorithm and the MPI_Allreduce baseline with 2, 3, 4 and 8
# ranks (oversubscribed on CI's 2 cores), small and odd sizes, a few dtypes / ops, more sends to
# one peer than its ring has slots, every copy mode (--shm-copy push, the default: fused, and a
# send of what a receive-reduce computed is written by that pass straight into the receiver's
# buffer; fused: receivers memcpy from the sender's mapped buffer and receive-reduces reduce from
# it in one pass; map: the same, receive-reduces through staging; cma: process_vm_readv from
# private buffers); #wrong must
# be 0 on every row and every run must exit 0. Every other collective at 3 and 4 ranks. No segment of a run
# may be left in /dev/shm. Then bad input. (A rank killed on this path: tools/fault_test.sh.)
# Usage: shm_bench_test.sh BUILD_BIN_DIR
set -u
bin="$1/topocoll-bench"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
bench_backends "$bin"

# Blocks of `--algorithm all`: every registered allreduce algorithm, and mpi.
all_blocks=$(( $("$1/topocoll" algorithms | awk '$2 == "allreduce"' | wc -l) + 1 ))
[ "$all_blocks" -ge 6 ] || { echo "FAIL: topocoll algorithms lists $((all_blocks - 1)) allreduce algorithms, expected >= 5"; exit 1; }

# run_ok NP BLOCKS ARGS...: exit 0, BLOCKS "Out of bounds values : 0 OK" footers, every data row
# with #wrong 0 out of place and in place, at least one data row, the shm header line, and no
# segment of the run left in /dev/shm (named after rank 0's pid, which the run prints).
run_ok() {
  local np="$1" blocks="$2"; shift 2
  local what="--backend shm -np $np $*"
  timeout 60 "${mpi[@]}" -np "$np" "$tmp/pid.sh" "$bin" --backend shm "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then fail "$what: exit $rc: $(head -c 600 "$tmp/err")"; return; fi
  local oks rows bad left
  oks=$(grep -c '^# Out of bounds values : 0 OK$' "$tmp/out")
  rows=$(grep -v '^#' "$tmp/out" | grep -vc 'not supported')
  bad=$(grep -v '^#' "$tmp/out" | grep -v 'not supported' | awk 'NF != 13 || $9 != "0" || $13 != "0"' | head -3)
  left=$(ls /dev/shm | grep "^topocoll-shm-$(cat "$tmp/pid")-")
  if [ "$oks" -ne "$blocks" ]; then fail "$what: $oks OK footers, expected $blocks"; return; fi
  if [ "$rows" -lt 1 ]; then fail "$what: no rows"; return; fi
  if [ -n "$bad" ]; then fail "$what: rows with #wrong != 0: $bad"; return; fi
  if ! grep -q "^# shm: $np ranks on this node read each other's buffers in place" "$tmp/out"; then
    fail "$what: no shm header line: $(grep '^# shm' "$tmp/out")"; return
  fi
  if [ -n "$left" ]; then fail "$what: left in /dev/shm: $left"; return; fi
  ok "$what"
}
# Rank 0 writes its pid (the segments' names carry it) before it becomes the bench.
cat >"$tmp/pid.sh" <<EOS
#!/bin/bash
[ "\$OMPI_COMM_WORLD_RANK" = 0 ] && echo \$\$ >"$tmp/pid"
exec "\$@"
EOS
chmod +x "$tmp/pid.sh"

start=$SECONDS
small=(-b 8 -e 64K -f 4 -n 2 -w 1)
odd=(-b 4004 -e 4004 -n 2 -w 1)  # 1001 floats: splits unevenly over ranks and channels
for np in 2 3 4 8; do
  run_ok "$np" "$all_blocks" --algorithm all "${small[@]}"
  run_ok "$np" "$all_blocks" --algorithm all "${odd[@]}"
done
for mode in fused map cma; do
  for np in 2 3; do run_ok "$np" "$all_blocks" --algorithm all "${odd[@]}" --shm-copy "$mode"; done
  run_ok 4 "$all_blocks" --algorithm all -b 8 -e 8K -f 8 -n 1 -w 0 -d double -o prod --channels 3 --shm-copy "$mode"
done
run_ok 3 "$all_blocks" --algorithm all -b 7 -e 1003 -f 11 -n 1 -w 0 -d int8 -o max
run_ok 4 "$all_blocks" --algorithm all -b 8 -e 8K -f 8 -n 1 -w 0 -d double -o prod --channels 3
run_ok 3 "$all_blocks" --algorithm all -b 8 -e 8K -f 8 -n 1 -w 0 -d int32 -o avg
run_ok 2 "$all_blocks" --algorithm all -b 2 -e 2002 -f 10 -n 1 -w 0 -d half -o sum  # mpi: no fp16 type, rows say so
run_ok 2 2 --algorithm ring,mpi -b 3M -e 3M -n 1 -w 0 --slice 256K            # several slices in flight
# More sends to one peer and channel than its ring has slots (16): the rest wait on the sender.
run_ok 4 2 --algorithm dbt,mpi -b 1M -e 1M -n 1 -w 0 --slice 4K --channels 4
run_ok 2 2 --algorithm ring,mpi -b 1M -e 1M -n 1 -w 0 --slice 4K --channels 1 --shm-copy cma
run_ok 8 2 --algorithm ring,mpi -b 4M -e 4M -n 1 -w 0 --channels 8
# The default pushes: the ring's last reduce-scatter step writes into the next rank's output, out
# of place at any p and in place at p = 2 (rank 0's count; the run's rows checked above).
for np in 2 4; do
  run_ok "$np" 1 --algorithm ring -b 1M -e 1M -n 2 -w 0
  line=$(grep '^# shm push: ' "$tmp/out")
  n=$(echo "$line" | awk '{print $4}')
  if [ -n "$n" ] && [ "$n" -gt 0 ]; then ok "--backend shm -np $np ring: $line"
  else fail "--backend shm -np $np ring: no sends pushed: '$line'"; fi
done
run_ok 2 1 --algorithm ring -b 1M -e 1M -n 2 -w 0 --shm-copy fused
if grep -q '^# shm push: ' "$tmp/out"; then fail "--shm-copy fused printed a push line: $(grep '^# shm push' "$tmp/out")"; else ok "--shm-copy fused: no push"; fi
# Every other collective: its algorithms and its MPI baseline (rooted ones at the last rank).
for c in allgather reduce_scatter broadcast reduce alltoall; do
  blocks=$(( $("$1/topocoll" algorithms | awk -v c="$c" '$2 == c' | wc -l) + 1 ))
  root=(); [ "$c" = broadcast ] || [ "$c" = reduce ] && root=(--root 2)
  run_ok 3 "$blocks" --collective "$c" "${root[@]}" -b 12 -e 4004 -f 5 -n 1 -w 0 -d int32 -o avg
  run_ok 4 "$blocks" --collective "$c" "${root[@]}" "${odd[@]}" --channels 3
done
echo "shm-bench: $((SECONDS - start)) s"

# Bad input: exit 2 and exactly one line.
"$bin" --backend shm --shm-copy pipe >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "shm-copy pipe: expected push (fused, and reduced results written straight into the receiver.s buffer), fused (buffers in shared memory, receive-reduces read the peer.s in place), map" "$tmp/err"; then ok
else fail "--shm-copy pipe: exit $rc, stderr: $(cat "$tmp/err")"; fi
"$bin" --backend shm --rounds --algorithm ring >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "rounds with --backend shm: expected --backend mpi" "$tmp/err"; then ok
else fail "--rounds --backend shm: exit $rc, stderr: $(cat "$tmp/err")"; fi

summary shm-bench
