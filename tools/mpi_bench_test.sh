#!/usr/bin/env bash
# CTest script for topocoll-bench over each backend it was built with (mpi; ucx when UCX was
# found): every allreduce algorithm and the MPI_Allreduce baseline with 2, 3, 4 and 8 ranks
# (oversubscribed on CI's 2 cores), small and odd sizes, a few dtypes / ops; #wrong must be 0 on
# every row and every run must exit 0. Every other collective (--collective) with --algorithm all at 3 and
# 4 ranks, awkward sizes, in place and out of place. Then JSONL records and bad input.
# The ucx backend runs under Open MPI's UCX PML (so `mpi` is MPI_Allreduce over UCX too), with
# the flags Debian's Open MPI needs to accept a machine with only shared memory and loopback TCP.
# Usage: mpi_bench_test.sh BUILD_BIN_DIR
set -u
bin="$1/topocoll-bench"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
mpi_launcher
ucx_pml=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=self,sm,tcp -x UCX_WARN_UNUSED_ENV_VARS=n)

# Blocks of `-a all`: every registered allreduce algorithm, and mpi.
all_blocks=$(( $("$1/topocoll" algorithms | awk '$2 == "allreduce"' | wc -l) + 1 ))
[ "$all_blocks" -ge 6 ] || { echo "FAIL: topocoll algorithms lists $((all_blocks - 1)) allreduce algorithms, expected >= 5"; exit 1; }

# Is the ucx backend built? (validated before MPI_Init: no mpirun needed)
backends=(mpi)
"$bin" --backend ucx --algorithm nosuch >"$tmp/out" 2>"$tmp/err"
if grep -q "built without UCX" "$tmp/err"; then echo "mpi-bench: no ucx backend in this build: testing mpi only"
else backends+=(ucx); fi

# launcher BACKEND: the mpirun command line for it (into the array `launch`).
launcher() {
  if [ "$1" = ucx ]; then launch=("${mpi[@]}" "${ucx_pml[@]}"); else launch=("${mpi[@]}"); fi
}

# run_ok BACKEND NP BLOCKS ARGS...: exit 0, BLOCKS "Out of bounds values : 0 OK" footers, every
# data row with #wrong 0 out of place and in place, and at least one data row.
run_ok() {
  local backend="$1" np="$2" blocks="$3"; shift 3
  launcher "$backend"
  timeout 60 "${launch[@]}" -np "$np" "$bin" --backend "$backend" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local what="--backend $backend -np $np $*"
  # In the ASan job LeakSanitizer's own tracer can crash at exit of an 8-rank MPI run ("Tracer
  # caught signal 11", "LeakSanitizer has encountered a fatal error", after "DTLS 8 at 0x3fb4-…":
  # a dynamic-TLS slot it cannot read; google/sanitizers#1353). That is the tool failing, not a
  # leak report: such a run is repeated once with leak detection off (AddressSanitizer and
  # UBSan still on), and said. The same code paths keep their leak check in the 2-, 3- and 4-rank
  # runs. Any other failure of the repeat fails the case.
  if [ "$rc" -ne 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$tmp/err"; then
    echo "mpi-bench: $what: LeakSanitizer's tracer crashed (google/sanitizers#1353); repeated without leak detection"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
      timeout 60 "${launch[@]}" -np "$np" "$bin" --backend "$backend" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
  fi
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
for backend in "${backends[@]}"; do
  start=$SECONDS
  for np in 2 3 4 8; do
    run_ok "$backend" "$np" "$all_blocks" --algorithm all "${small[@]}"
    run_ok "$backend" "$np" "$all_blocks" --algorithm all "${odd[@]}"
  done
  run_ok "$backend" 3 "$all_blocks" --algorithm all -b 7 -e 1003 -f 11 -n 1 -w 0 -d int8 -o max
  run_ok "$backend" 4 "$all_blocks" --algorithm all -b 8 -e 8K -f 8 -n 1 -w 0 -d double -o prod --channels 3
  run_ok "$backend" 3 "$all_blocks" --algorithm all -b 8 -e 8K -f 8 -n 1 -w 0 -d int32 -o avg
  run_ok "$backend" 2 "$all_blocks" --algorithm all -b 2 -e 2002 -f 10 -n 1 -w 0 -d half -o sum      # mpi: no fp16 type, rows say so
  run_ok "$backend" 2 2 --algorithm ring,mpi -b 3M -e 3M -n 1 -w 0 --slice 256K          # several slices in flight
  run_ok "$backend" 4 2 --algorithm dbt,mpi -b 1M -e 1M -n 1 -w 0 --slice 64K --channels 4  # many sends in flight
  if [ "$backend" = ucx ]; then
    # UCX's bulk endpoints (CMA rendezvous): a rank that finished its receives and waits in the
    # barrier must still progress UCX, or the peer's last send never completes (it hung 3 runs
    # of 3 before Transport::progress ran inside the communicator's waits).
    run_ok ucx 2 3 --algorithm dbt,ring,recursive-doubling -b 1M -e 16M -f 4 -n 3 -w 1 --ucx-bulk 64K --timeout 20
  fi

  # Every other collective: its algorithms and its MPI baseline (rooted ones at the last rank).
  for c in allgather reduce_scatter broadcast reduce alltoall; do
    blocks=$(( $("$1/topocoll" algorithms | awk -v c="$c" '$2 == c' | wc -l) + 1 ))
    root=(); [ "$c" = broadcast ] || [ "$c" = reduce ] && root=(--root 2)
    run_ok "$backend" 3 "$blocks" --collective "$c" "${root[@]}" -b 12 -e 4004 -f 5 -n 1 -w 0 -d int32 -o avg
    run_ok "$backend" 4 "$blocks" --collective "$c" "${root[@]}" "${odd[@]}" --channels 3
  done

  if [ "$backend" = mpi ]; then
    # Round plans across processes (what --backend nccl runs, over MPI_Isend/Irecv groups here):
    # every algorithm, 2, 3, 4 and 8 ranks, small and odd sizes, many slices.
    for np in 2 3 4 8; do
      run_ok mpi "$np" "$all_blocks" --algorithm all --rounds "${small[@]}" --slice 4K
      run_ok mpi "$np" "$all_blocks" --algorithm all --rounds "${odd[@]}" --slice 64
    done
  fi

  # JSONL: one measured record per size and placement, wrong 0, engine = the backend.
  launcher "$backend"
  if timeout 60 "${launch[@]}" -np 2 "$bin" --backend "$backend" --algorithm ring,mpi -b 8 -e 1K -f 4 -n 1 -w 0 --format jsonl \
      -O "$tmp/rec.jsonl" >"$tmp/out" 2>"$tmp/err"; then
    n=$(grep -c '"kind":"measured"' "$tmp/rec.jsonl")
    w=$(grep -c '"wrong":0' "$tmp/rec.jsonl")
    e=$(grep -c "\"engine\":\"$backend\"" "$tmp/rec.jsonl")
    if [ "$n" -eq 16 ] && [ "$w" -eq 16 ] && [ "$e" -eq 16 ]; then ok
    else fail "jsonl ($backend): $n measured, $w wrong:0, $e engine $backend; expected 16"; fi
  else
    fail "jsonl run ($backend): exit $?: $(head -c 300 "$tmp/err")"
  fi
  echo "mpi-bench: backend $backend: $((SECONDS - start)) s"
done

# The table header names the transport and the PML MPI_Allreduce runs over.
if [[ " ${backends[*]} " == *" ucx "* ]]; then
  launcher ucx
  timeout 60 "${launch[@]}" -np 2 "$bin" --backend ucx --algorithm ring -b 8 -e 8 -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
  if grep -q '^# UCX: GPU memory .*supported by this UCX build (memory types: host' "$tmp/out" &&
     grep -q '^# MPI (the mpi algorithm, and the bootstrap): PML ucx' "$tmp/out"; then ok
  else fail "ucx header: $(grep '^# [UM]' "$tmp/out") $(head -c 300 "$tmp/err")"; fi
fi

# Bad input: exit 2 and exactly one line (without mpirun: the whole stderr; under mpirun: rank 0's).
"$bin" --algorithm ring,nosuch -b 8 -e 64 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "unknown allreduce algorithm 'nosuch'" "$tmp/err"; then ok
else fail "unknown algorithm: exit $rc, stderr: $(cat "$tmp/err")"; fi
timeout 60 "${mpi[@]}" -np 2 "$bin" --algorithm nosuch >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(grep -c '^topocoll-bench: error' "$tmp/err")" -eq 1 ]; then ok
else fail "unknown algorithm under mpirun: exit $rc, stderr: $(cat "$tmp/err")"; fi
"$bin" --collective foo >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "unknown collective 'foo': expected one of allreduce, reduce_scatter, allgather, broadcast, reduce, alltoall" "$tmp/err"; then ok
else fail "--collective foo: exit $rc, stderr: $(cat "$tmp/err")"; fi
"$bin" --collective allgather --algorithm ring >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "ring is an algorithm of allreduce; --collective allgather expects allgather-ring, mpi or all" "$tmp/err"; then ok
else fail "--collective allgather --algorithm ring: exit $rc, stderr: $(cat "$tmp/err")"; fi
timeout 60 "${mpi[@]}" -np 2 "$bin" --collective reduce --root 2 -b 8 -e 8 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(grep -c '^topocoll-bench: error' "$tmp/err")" -eq 1 ] && grep -q "root 2: expected a rank of the job, 0 to 1" "$tmp/err"; then ok
else fail "--root 2 with 2 ranks: exit $rc, stderr: $(head -c 400 "$tmp/err")"; fi
# --topology: the topology's layout (pcie-8gpu: a NUMA-aware ring order across the two sockets),
# checked against the job.
run_ok mpi 8 2 --algorithm ring,dbt -b 8 -e 64K -f 32 -n 1 -w 0 --topology pcie-8gpu
timeout 60 "${mpi[@]}" -np 2 "$bin" --topology dgx-h100 -b 8 -e 8 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(grep -c '^topocoll-bench: error' "$tmp/err")" -eq 1 ] &&
   grep -q "topology dgx-h100: 8 ranks (8 per node on 1 node), but the job has 2 ranks (2 per node on 1 node)" "$tmp/err"; then ok
else fail "--topology dgx-h100 with 2 ranks: exit $rc, stderr: $(head -c 400 "$tmp/err")"; fi

# --backend nccl (the stock NCCL baselines and topocoll's schedules over NCCL send/recv): without
# NCCL in the build, or without a GPU, one line says so, exit 2.
if ! nvidia-smi -L >/dev/null 2>&1; then
  for algs in nccl ring,dbt,nccl; do
    timeout 60 "${mpi[@]}" -np 1 "$bin" --backend nccl --algorithm "$algs" -b 8 -e 8 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(grep -c '^topocoll-bench: error' "$tmp/err")" -eq 1 ] && grep -q "no usable GPU\|built without CUDA + NCCL" "$tmp/err"; then ok
    else fail "--backend nccl --algorithm $algs without a GPU: exit $rc, stderr: $(head -c 400 "$tmp/err")"; fi
  done
fi
"$bin" --backend ucx --rounds --algorithm ring >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "rounds with --backend ucx: expected --backend mpi" "$tmp/err"; then ok
else fail "--rounds --backend ucx: exit $rc, stderr: $(cat "$tmp/err")"; fi
TOPOCOLL_TIMEOUT=soon "$bin" --algorithm ring >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "TOPOCOLL_TIMEOUT='soon': expected the progress timeout in seconds" "$tmp/err"; then ok
else fail "TOPOCOLL_TIMEOUT=soon: exit $rc, stderr: $(cat "$tmp/err")"; fi
"$bin" --backend tcp >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "backend tcp: expected mpi" "$tmp/err"; then ok
else fail "--backend tcp: exit $rc, stderr: $(cat "$tmp/err")"; fi

summary mpi-bench
