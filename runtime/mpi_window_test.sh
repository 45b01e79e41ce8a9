#!/usr/bin/env bash
# The executor's send window over MPI on 2 ranks (runtime/mpi_window_probe.cpp): window - 1,
# window, window + 1 and 2 x window sends of 128 KiB ahead of the receives, and the 64/65-send
# repros of runtime/testdata. Usage: mpi_window_test.sh BIN_DIR SOURCE_DIR
set -u
bin=$1 src=$2
fail=0
mpi=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
for arg in 63 64 65 128 "$src/runtime/testdata/schedule-window-64-sends-control.json" \
  "$src/runtime/testdata/schedule-window-65-sends-runtime-stall.json"; do
  start=$(date +%s.%N)
  if timeout 60 "${mpi[@]}" -np 2 "$bin/mpi_window_probe" "$arg"; then
    printf 'ok   %s (%.2f s)\n' "$(basename "$arg")" "$(echo "$(date +%s.%N) - $start" | bc)"
  else
    echo "FAIL $arg"
    fail=1
  fi
done
exit $fail
