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
