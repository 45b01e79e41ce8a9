#!/usr/bin/env bash
# All-to-allv through every executor: a size matrix (--sizes) is verified, simulated by both
# engines (a uniform matrix to the same time as alltoall-pairwise of that count: the same call),
# exported as a schedule file and run from it, and run by topocoll-bench over each backend
# against MPI_Ialltoallv with #wrong 0 (an asymmetric matrix: in-place columns N/A); bad matrices
# and misuse get one error line and exit 2.
# Usage: alltoallv_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
bench="$1/topocoll-bench"
data="$2/algorithms/testdata/alltoallv"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

expect_error() {  # expect_error EXPECTED_SUBSTRING CMD...: exit 2, the substring, one error line
  local want="$1"; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 2 ]; then fail "$* : exit $rc, expected 2 ($(head -c 300 "$tmp/err"))"; return; fi
  if ! grep -qF -- "$want" "$tmp/err"; then fail "$* : stderr '$(head -c 600 "$tmp/err")' lacks '$want'"; return; fi
  if [ "$(grep -c 'error:' "$tmp/err")" -ne 1 ]; then fail "$* : not one error line: $(cat "$tmp/err")"; return; fi
  ok
}
run() { "$@" >"$tmp/out" 2>"$tmp/err" || { fail "$* : exit $? ($(head -c 300 "$tmp/err"))"; return 1; }; ok; }

# --- verify ----------------------------------------------------------------------------------
if run "$bin" verify --layout 2x4 --collective alltoallv --sizes "$data/moe-8.csv" --channels 3; then
  check 'grep -q "^alltoallv-pairwise .* OK$" "$tmp/out"' "verify of the moe matrix: $(cat "$tmp/out")"
fi
run "$bin" verify --layout 1x4 --collective alltoallv --sizes "$data/sym-4.csv" --in-place
check 'grep -q "^alltoallv-pairwise .* OK$" "$tmp/out"' "verify in place of the symmetric matrix: $(cat "$tmp/out")"
expect_error "an in-place alltoallv needs a symmetric size matrix" \
  "$bin" verify --layout 2x4 --collective alltoallv --sizes "$data/moe-8.csv" --in-place
# Without a matrix the algorithm says what it needs (a line of the table, not a failure).
run "$bin" verify --layout 1x4 --collective alltoallv
check 'grep -q "not supported: an alltoallv needs a size matrix" "$tmp/out"' "verify without --sizes: $(cat "$tmp/out")"

# --- sim: a uniform matrix is the alltoall of its count, on both engines ---------------------
for engine in analytic simgrid; do
  if run "$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$data/uniform-8.csv" --channels 2 \
    --engine "$engine" --format csv; then
    v=$(grep -v '^engine' "$tmp/out")
    check '[ "$(echo "$v" | wc -l)" -eq 1 ] && echo "$v" | grep -q "^[a-z]*,alltoallv-pairwise,1,8,4000,0,float,"' \
      "sim $engine alltoallv: one row of 4000 B: $v"
    run "$bin" sim --topology pcie-8gpu --collective alltoall --algorithm alltoall-pairwise -b 4000 -e 4000 --channels 2 \
      --engine "$engine" --format csv
    a2a=$(grep -v '^engine' "$tmp/out" | cut -d, -f10)
    check '[ "$(echo "$v" | cut -d, -f10)" = "$a2a" ]' "sim $engine: uniform alltoallv $(echo "$v" | cut -d, -f10) us vs alltoall $a2a us"
  fi
done
# The skewed matrix: slower than the uniform one of the same total (the hot ranks' links bound it).
run "$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$data/moe-8.csv" --format csv
moe_row=$(grep -v '^engine' "$tmp/out")
check 'echo "$moe_row" | grep -q ",alltoallv-pairwise,1,8,"' "sim of the moe matrix: $moe_row"
run "$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$data/moe-8.csv"
check 'grep -q "^# sizes: 8x8 size matrix" "$tmp/out" && grep -q "nccl-model: none" "$tmp/out"' "sim table header: $(head -8 "$tmp/out")"

# --- a schedule file of it: exported, run from the file (its matrix comes with it) ------------
if run "$bin" schedule export --topology pcie-8gpu --algorithm alltoallv-pairwise --sizes "$data/moe-8.csv" -o "$tmp/a2av.json"; then
  run "$bin" verify --schedule "$tmp/a2av.json"
  check 'grep -q " OK$" "$tmp/out"' "verify of the exported alltoallv: $(cat "$tmp/out")"
  if run "$bin" sim --topology pcie-8gpu --schedule "$tmp/a2av.json" --format csv; then
    f=$(grep -v '^engine' "$tmp/out" | cut -d, -f10)
    check '[ "$f" = "$(echo "$moe_row" | cut -d, -f10)" ]' "sim of the exported file: $f us vs $(echo "$moe_row" | cut -d, -f10) us"
  fi
  expect_error "written for another size matrix" \
    "$bin" sim --topology pcie-8gpu --schedule "$tmp/a2av.json" --sizes "$data/uniform-8.csv" --collective alltoallv
fi

# --- bad input ------------------------------------------------------------------------------
printf '1 2\n3\n' >"$tmp/ragged.csv"
printf '1 -2\n3 4\n' >"$tmp/negative.csv"
expect_error "ragged.csv:2: a row of 1 counts: expected 2" \
  "$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$tmp/ragged.csv"
expect_error "'-2' is not an element count" "$bin" verify --layout 1x2 --collective alltoallv --sizes "$tmp/negative.csv"
expect_error "a size matrix of 4 ranks; the job has 8" \
  "$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$data/sym-4.csv"
expect_error "no size matrix: expected --sizes FILE" "$bin" sim --topology pcie-8gpu --collective alltoallv
expect_error "a size matrix is for --collective alltoallv; this run is allreduce" \
  "$bin" sim --topology pcie-8gpu --sizes "$data/moe-8.csv"
expect_error "an alltoallv runs at the sizes of its matrix" \
  "$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$data/moe-8.csv" -b 1K -e 1M
expect_error "cannot read the size matrix" "$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$tmp/none.csv"

# --- bench: every backend, against MPI_Ialltoallv, #wrong 0 ---------------------------------
if [ -x "$bench" ] && command -v mpirun >/dev/null; then
  bench_backends "$bench"
  for backend in "${backends[@]}"; do
    launch_for "$backend"
    # Asymmetric: out of place only ($9 #wrong 0), the in-place columns N/A.
    if timeout 120 "${launch[@]}" -np 8 "$bench" --backend "$backend" --collective alltoallv --sizes "$data/moe-8.csv" \
      -n 2 -w 1 >"$tmp/out" 2>"$tmp/err"; then
      rows=$(grep -v '^#' "$tmp/out")
      check '[ "$(echo "$rows" | wc -l)" -eq 2 ] && [ -z "$(echo "$rows" | awk '\''$9 != "0" || $13 != "N/A"'\'')" ] && grep -q "MPI_Ialltoallv" "$tmp/out"' \
        "bench --backend $backend alltoallv moe: $(cat "$tmp/out") $(head -c 300 "$tmp/err")"
    else
      fail "bench --backend $backend alltoallv moe: exit $? $(head -c 400 "$tmp/err")"
    fi
    # Symmetric: in place too ($13 #wrong 0).
    if timeout 120 "${launch[@]}" -np 4 "$bench" --backend "$backend" --collective alltoallv --sizes "$data/sym-4.csv" \
      -n 2 -w 1 >"$tmp/out" 2>"$tmp/err"; then
      rows=$(grep -v '^#' "$tmp/out")
      check '[ "$(echo "$rows" | wc -l)" -eq 2 ] && [ -z "$(echo "$rows" | awk '\''$9 != "0" || $13 != "0"'\'')" ]' \
        "bench --backend $backend alltoallv sym: $(cat "$tmp/out")"
    else
      fail "bench --backend $backend alltoallv sym: exit $? $(head -c 400 "$tmp/err")"
    fi
  done
  # A matrix for another rank count: every rank stops with the same error, exit 2.
  timeout 120 "${mpi[@]}" -np 4 "$bench" --collective alltoallv --sizes "$data/moe-8.csv" -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check '[ $rc -eq 2 ] && grep -q "a size matrix of 8 ranks; the job has 4 ranks" "$tmp/err"' "bench with a matrix of 8 on 4 ranks: exit $rc $(head -c 300 "$tmp/err")"
else
  echo "alltoallv_test: no topocoll-bench or mpirun: the bench part is not run"
fi

summary alltoallv_test
