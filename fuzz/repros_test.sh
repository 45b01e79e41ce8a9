#!/usr/bin/env bash
# The parser reproducers of fuzz/repros/ (README.md there) and the command-line sizes that used
# to hang or convert out of range: each must end within 10 s with exit status 2 and one line
# "error: ..." on stderr, never a hang, a crash, a sanitizer report or an internal error.
#   fuzz/repros_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
repros=$src/fuzz/repros
. "$src/tools/test_lib.sh"

# expect_input_error WHAT CMD...: exit 2 and one line of stderr, an error that is not internal.
expect_input_error() {
  local what=$1
  shift
  timeout 10 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  local lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 2 ]; then
    fail "$what: exit $rc, expected 2 ($(head -c 300 "$tmp/err"))"
  elif [ "$lines" -ne 1 ] || ! grep -q "error: " "$tmp/err" || grep -q "internal error" "$tmp/err"; then
    fail "$what: expected one line of input error on stderr, got $lines: $(head -c 300 "$tmp/err")"
  else
    ok "$what: $(cat "$tmp/err")"
  fi
}

topocoll=$bin/topocoll
for f in "$repros"/schedule-*.json "$repros"/verify-*.json; do
  case "$f" in *window-6[45]*) continue ;; esac  # valid schedules: the executor's send window
  expect_input_error "verify $(basename "$f")" "$topocoll" verify --schedule "$f"
  expect_input_error "verify --in-place $(basename "$f")" "$topocoll" verify --schedule "$f" --in-place
done
for f in "$repros"/calibration-*.json; do
  expect_input_error "sim --calibration $(basename "$f")" "$topocoll" sim --topology pcie-8gpu -b 1K -e 1K --calibration "$f"
done
check "! grep -q 'nvl$' <<<\"\$(timeout 10 $topocoll sim --topology pcie-8gpu -b 1K -e 1K --calibration $repros/calibration-02-unclear.json 2>&1)\"" \
  "calibration-02: the key is escaped"
for f in xml-01-hang xml-02-internal-error xml-03-sanitizer xml-duplicate-busid xml-nvlink-count-1e6-accepted \
  xml-nvlink-count-over-int-max xml-nvlink-count-sum-overflow xml-self-nvlink-nvswitch-class-self-link; do
  expect_input_error "topo show $f.xml" "$topocoll" topo show --topology "$repros/$f.xml"
done
for f in "$repros"/exp-*.yaml; do
  # Each spec in a folder of its own, as experiments/NAME/experiment.yaml; its records go to $tmp.
  d=$tmp/$(basename "$f" .yaml)
  mkdir -p "$d"
  cp "$f" "$d/experiment.yaml"
  # The spec that names local topologies and a calibration gets them, so that its sizes are what fails.
  mkdir -p "$d/topologies"
  cp "$src/experiments/sim-vs-real-local/calibration.json" "$d/"
  cp "$src"/experiments/sim-vs-real-local/topologies/*.xml "$d/topologies/" 2>/dev/null
  expect_input_error "exp run $(basename "$f")" "$topocoll" exp run "$d/experiment.yaml" -o "$d/out" -q
done

# Valid inputs that used to trip the sanitizers (signed overflow in the max-flow bound, a leak in
# hwloc's load path): they must print their summary and exit 0. In the ASan + UBSan job
# (scripts/test-sanitizers) any report makes them fail.
expect_clean() {
  local what=$1
  shift
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  if [ "$rc" -ne 0 ] || ! grep -q "^topology " "$tmp/out" || [ -s "$tmp/err" ]; then
    fail "$what: exit $rc, expected 0, the summary and nothing on stderr ($(head -c 300 "$tmp/err"))"
  else
    ok "$what: $(grep -m1 "busbw <=" "$tmp/out" || head -1 "$tmp/out")"
  fi
}
for f in xml-10-gpus-maxflow-ub.xml xml-self-nvlink-nic-class-self-link.xml yaml-01-sanitizer.yaml yaml-02-sanitizer.yaml; do
  expect_clean "topo show $f" "$topocoll" topo show --topology "$repros/$f"
done
expect_clean "topo show dgx-h100 x2" "$topocoll" topo show --topology dgx-h100 --nodes 2
expect_clean "topo show dgx-a100 x4" "$topocoll" topo show --topology dgx-a100 --nodes 4

# Input echoed in an error stays on one line: a file name with a newline.
expect_input_error "topo show a name with a newline" "$topocoll" topo show --topology $'no\nsuch.xml'

# Sweeps: a factor one ulp above 1, sizes to 2^64 (sim and bench), a timeout of inf.
expect_input_error "sim -f 1.0000000000000002" "$topocoll" sim --topology pcie-8gpu --algorithm ring -b 8 -e 16 \
  -f 1.0000000000000002
expect_input_error "verify --count 2^64-1" "$topocoll" verify --topology pcie-8gpu -a ring -c 18446744073709551615
expect_input_error "schedule export --count 2^62 (allgather)" "$topocoll" schedule export --topology pcie-8gpu \
  -a allgather-ring -c 4611686018427387904
expect_input_error "sim -e 2^64-1" "$topocoll" sim --topology pcie-8gpu --algorithm ring -b 8 -e 18446744073709551615
if [ -x "$bin/topocoll-bench" ]; then
  bench=$bin/topocoll-bench
  expect_input_error "bench -b/-e 2^64-1" "$bench" --algorithm ring -b 18446744073709551615 -e 18446744073709551615 -n 1 -w 0
  expect_input_error "bench -f 1.0000000000000002" "$bench" --algorithm ring -b 8 -e 64 -f 1.0000000000000002
  expect_input_error "bench --timeout inf" "$bench" --algorithm ring -b 8 -e 64 --timeout inf
  expect_input_error "bench --timeout 1e300" "$bench" --algorithm ring -b 8 -e 64 --timeout 1e300
fi
summary repros_test
