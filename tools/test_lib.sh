# Shared by the shell test scripts (sourced): a temporary folder removed on exit, pass / fail
# counters, and the summary that sets the exit status.
#   fail MESSAGE    a failed check (printed)        ok [MESSAGE]   a passed one (MESSAGE printed
#   check EXPR MSG  ok if EXPR holds, else fail MSG                 when TEST_LIB_VERBOSE=1)
#   summary NAME    "NAME: P passed, F failed"; status 0 only without failures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() {
  [ "${TEST_LIB_VERBOSE:-0}" = 1 ] && [ $# -gt 0 ] && echo "ok: $*"
  passed=$((passed + 1))
}
check() { if eval "$1"; then ok; else fail "$2"; fi; }
summary() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# For the scripts that run processes under mpirun:
#   mpi_launcher           sets mpi (mpirun oversubscribed; as root when root)
#   mpi_yaml               prints mpi as a YAML flow list, for an experiment spec's real.mpirun
#   bench_backends BENCH   mpi_launcher, then sets backends (mpi, and ucx when BENCH was built
#                          with it)
#   launch_for BACKEND     sets launch: mpi, plus Open MPI's UCX PML flags for ucx (Debian's Open
#                          MPI needs them on a machine with only shared memory and loopback TCP)
mpi_launcher() {
  mpi=(mpirun --oversubscribe --allow-run-as-root)
  [ "$(id -u)" = 0 ] || mpi=(mpirun --oversubscribe)
  # The ASan job (scripts/test-sanitizers asan sets detect_leaks=1): the ranks keep ASan and UBSan
  # but not LeakSanitizer's exit-time check, whose tracer (GCC 12's libsanitizer) crashes now and
  # then in one of 8 oversubscribed ranks ("Tracer caught signal 11" at a small address, then
  # "LeakSanitizer has encountered a fatal error"), failing a run that found nothing. Leaks stay
  # checked in every process that is not started through here. Without the leak check the ranks
  # need no full unwind on every allocation (runtime/asan_mpi_options.cpp: it is there for the
  # leak suppressions), so they take the fast one, which keeps the MPI tests' time under ASan down.
  if [[ "${ASAN_OPTIONS:-}" == *detect_leaks=1* ]]; then
    mpi+=(-x "ASAN_OPTIONS=${ASAN_OPTIONS//detect_leaks=1/detect_leaks=0}:fast_unwind_on_malloc=1")
  fi
}
mpi_yaml() {
  local out="" a
  for a in "${mpi[@]}"; do out+="${out:+, }\"$a\""; done
  echo "[$out]"
}
bench_backends() {
  mpi_launcher
  backends=(mpi)
  "$1" --backend ucx --algorithm nosuch >/dev/null 2>"$tmp/backend-err"
  grep -q "built without UCX" "$tmp/backend-err" || backends+=(ucx)
}
launch_for() {
  launch=("${mpi[@]}")
  [ "$1" = ucx ] && launch+=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=self,sm,tcp
    -x UCX_WARN_UNUSED_ENV_VARS=n)
  return 0
}
