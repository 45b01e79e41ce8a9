#!/usr/bin/env bash
# Schedule files through every executor (algorithms/schedule_file.hpp): a schedule exported by one
# command is verified, simulated by both engines to the same time as the registered algorithm
# it came from, and run by topocoll-bench over each backend with #wrong 0; a hand-broken one is
# refused by all three with the verifier's reason; bad files get one error line and exit 2.
# Usage: schedule_file_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
bench="$1/topocoll-bench"
src="$2"
broken="$src/algorithms/testdata/broken-ring-8.json"  # ring on 8 ranks, rank 3's first recv_reduce made a recv
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

# expect_error EXPECTED_SUBSTRING CMD...: exit 2 and the substring on stderr.
expect_error() {
  local want="$1"; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 2 ]; then fail "$* : exit $rc, expected 2 ($(head -c 300 "$tmp/err"))"; return; fi
  if ! grep -qF -- "$want" "$tmp/err"; then fail "$* : stderr '$(head -c 600 "$tmp/err")' lacks '$want'"; return; fi
  ok
}
# One error line from topocoll itself (mpirun adds its own lines for the bench).
one_line() { if [ "$(grep -c 'error:' "$tmp/err")" -eq 1 ]; then ok; else fail "$1: $(cat "$tmp/err")"; fi; }
run() { "$@" >"$tmp/out" 2>"$tmp/err" || { fail "$* : exit $? ($(head -c 300 "$tmp/err"))"; return 1; }; ok; }

# --- export, verify ----------------------------------------------------------------------
# dbt on 8 GPUs, 3 channels, an awkward count (1000 = not a multiple of ranks x channels).
run "$bin" schedule export --topology pcie-8gpu --algorithm dbt --count 1000 --channels 3 --slice 512K -o "$tmp/dbt.json"
run "$bin" verify --schedule "$tmp/dbt.json" && check 'grep -q " OK$" "$tmp/out"' "verify of the exported dbt"
"$bin" verify --schedule "$broken" >"$tmp/out" 2>&1
rc=$?
check '[ $rc -eq 1 ] && grep -q "FAIL missing contribution" "$tmp/out"' "verify of the broken ring: $(cat "$tmp/out")"

# --- sim: the file's own size alone, both engines, the same time as the registered dbt ------
for engine in analytic simgrid; do
  if run "$bin" sim --topology pcie-8gpu --schedule "$tmp/dbt.json" --engine "$engine" --format csv --no-nccl-model; then
    file_row=$(grep -v '^engine' "$tmp/out")
    check '[ "$(echo "$file_row" | wc -l)" -eq 1 ] && echo "$file_row" | grep -q ",4000,1000,float,"' \
      "sim --schedule: one row at the file's 4000 B: $file_row"
    run "$bin" sim --topology pcie-8gpu --algorithm dbt -b 4000 -e 4000 --channels 3 --slice 512K --engine "$engine" --format csv --no-nccl-model
    own=$(grep -v '^engine' "$tmp/out" | cut -d, -f10)
    check '[ "$(echo "$file_row" | cut -d, -f10)" = "$own" ]' "sim $engine: file $(echo "$file_row" | cut -d, -f10) us vs dbt $own us"
  fi
done
# In a sweep with the registry's algorithms: the file sits out the other sizes, said in the table.
if run "$bin" sim --topology pcie-8gpu --schedule "$tmp/dbt.json" --algorithm ring -b 1000 -e 16000 -f 2 --no-nccl-model; then
  check 'grep -q "2000 not run: the schedule is for 4000 B only" "$tmp/out"' "sim sweep with a fixed-count file: $(grep -v '^#' "$tmp/out" | head -3)"
fi
expect_error "the sizes of the run (1024 to 8192 B, 4 of them) do not include it" \
  "$bin" sim --topology pcie-8gpu --schedule "$tmp/dbt.json" -b 1K -e 8K
one_line "sim, a sweep without the file's size"
expect_error "written for 8 ranks; dgx-h100 x 2 has 16 GPUs" "$bin" sim --topology dgx-h100 --nodes 2 --schedule "$tmp/dbt.json"
expect_error "the verifier refuses it at count 16: missing contribution" "$bin" sim --topology pcie-8gpu --schedule "$broken"
one_line "sim of the broken ring"
expect_error "the verifier refuses it at count 16: missing contribution" "$bin" sim --topology pcie-8gpu --schedule "$broken" --engine simgrid
run "$bin" sim --topology pcie-8gpu --schedule "$broken" --no-verify --no-nccl-model
expect_error "no such file: expected a schedule file" "$bin" sim --topology pcie-8gpu --schedule "$tmp/none.json"
printf '[1, 2]' >"$tmp/array.json"
expect_error "not a schedule file: expected topocoll's schedule JSON" "$bin" sim --topology pcie-8gpu --schedule "$tmp/array.json"
printf '{"format": "topocoll-schedule", "version": 1}' >"$tmp/partial.json"
expect_error "$tmp/partial.json" "$bin" sim --topology pcie-8gpu --schedule "$tmp/partial.json"

# --- an experiment spec with the file (grid.schedules) beside the registered dbt ------------
mkdir -p "$tmp/exp"
cp "$tmp/dbt.json" "$tmp/exp/dbt.json"
cat >"$tmp/exp/experiment.yaml" <<'YAML'
description: a schedule file beside the registered algorithm it was exported from
engine: simgrid
nccl_model: false
grid:
  topologies: pcie-8gpu
  algorithms: [dbt]
  schedules: [dbt.json]
  sizes: {min: 1000, max: 8000, factor: 2}
  channels: [3]
  slice: 512K
YAML
if run "$bin" exp run "$tmp/exp/experiment.yaml" -q; then
  rec="$tmp/exp/records.jsonl"
  # dbt at 4 sizes, the file at its own size only: 5 records; the file's time equals dbt's at 4000 B.
  check '[ "$(wc -l <"$rec")" -eq 5 ]' "exp with grid.schedules: $(wc -l <"$rec") records, expected 5"
  t_file=$(grep '"algorithm":"dbt@dbt.json"' "$rec" | grep -o '"time_us":[0-9.e+-]*')
  t_own=$(grep '"algorithm":"dbt"' "$rec" | grep '"size_bytes":4000' | grep -o '"time_us":[0-9.e+-]*')
  check '[ -n "$t_file" ] && [ "$t_file" = "$t_own" ]' "exp: the file's $t_file vs dbt's $t_own"
fi
sed -e 's/min: 1000/min: 8192/' -e 's/max: 8000/max: 65536/' "$tmp/exp/experiment.yaml" >"$tmp/exp/sizes.yaml"
expect_error "grid.schedules with dtype float: " "$bin" exp run "$tmp/exp/sizes.yaml"
one_line "exp: a sweep without the file's size"
cp "$broken" "$tmp/exp/broken.json"
sed -e 's/dbt.json/broken.json/' "$tmp/exp/experiment.yaml" >"$tmp/exp/broken.yaml"
expect_error "grid.schedules: " "$bin" exp run "$tmp/exp/broken.yaml"
grep -q "the verifier refuses it" "$tmp/err" && ok || fail "exp with a broken schedule: $(cat "$tmp/err")"

# --- bench: the same file over each backend, #wrong 0 in and out of place ------------------
if [ -x "$bench" ] && command -v mpirun >/dev/null; then
  bench_backends "$bench"
  for backend in "${backends[@]}"; do
    launch_for "$backend"
    if timeout 120 "${launch[@]}" -np 8 "$bench" --backend "$backend" --topology pcie-8gpu --schedule "$tmp/dbt.json" \
      -n 2 -w 1 >"$tmp/out" 2>"$tmp/err"; then
      rows=$(grep -v '^#' "$tmp/out")
      # Two blocks (mpi, the file), one row each at 4000 B, #wrong 0 out of place ($9) and in place ($13).
      check '[ "$(echo "$rows" | wc -l)" -eq 2 ] && [ -z "$(echo "$rows" | awk '\''$1 != 4000 || $9 != "0" || $13 != "0"'\'')" ]' \
        "bench --backend $backend --schedule: $rows"
      check 'grep -q "^# dbt@dbt.json: schedule file" "$tmp/out"' "bench --backend $backend: the file's block"
    else
      fail "bench --backend $backend --schedule dbt.json: exit $? ($(head -c 400 "$tmp/err"))"
    fi
    timeout 120 "${launch[@]}" -np 8 "$bench" --backend "$backend" --topology pcie-8gpu --schedule "$broken" -n 1 -w 0 \
      >"$tmp/out" 2>"$tmp/err"
    rc=$?
    check '[ $rc -eq 2 ] && [ "$(grep -c "topocoll-bench: error: .*the verifier refuses it at count 16: missing contribution" "$tmp/err")" -eq 1 ]' \
      "bench --backend $backend of the broken ring: exit $rc, $(head -c 400 "$tmp/err")"
    check '[ -z "$(grep -v "^#" "$tmp/out")" ]' "bench of the broken ring ran rows before refusing it"
  done
  # Another collective: an all-to-all file takes its collective from the file (no --collective).
  if run "$bin" schedule export --topology pcie-8gpu --algorithm alltoall-pairwise --count 125 -o "$tmp/a2a.json"; then
    if run "$bin" sim --topology pcie-8gpu --schedule "$tmp/a2a.json" --format csv; then
      check '[ "$(grep -c ",alltoall-pairwise@a2a.json,.*,4000,125,float," "$tmp/out")" -eq 1 ]' "sim of an alltoall file: $(cat "$tmp/out")"
    fi
    timeout 120 "${mpi[@]}" -np 8 "$bench" --topology pcie-8gpu --schedule "$tmp/a2a.json" -n 2 -w 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    rows=$(grep -v '^#' "$tmp/out")
    check '[ $rc -eq 0 ] && grep -q "alltoall (alltoall_perf)" "$tmp/out" && [ "$(echo "$rows" | wc -l)" -eq 2 ] && [ -z "$(echo "$rows" | awk '\''$1 != 4000 || $9 != "0" || $13 != "0"'\'')" ]' \
      "bench of an alltoall file: exit $rc: $rows $(head -c 300 "$tmp/err")"
    expect_error "written for alltoall; this run is allreduce" "$bench" --collective allreduce --schedule "$tmp/a2a.json"
  fi
  # Unverified, the bench's own bit-exact check catches it: #wrong > 0, exit 1.
  timeout 120 "${mpi[@]}" -np 8 "$bench" --topology pcie-8gpu --schedule "$broken" --no-verify --algorithm ring -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check '[ $rc -eq 1 ] && grep -q "^# Out of bounds values : [1-9][0-9]* FAILED" "$tmp/out"' \
    "bench --no-verify of the broken ring: exit $rc, $(grep '^# Out of' "$tmp/out")"
  # engine real: the file alone in a measured grid (its own size, in and out of place).
  mkdir -p "$tmp/real"
  cp "$tmp/dbt.json" "$tmp/real/dbt.json"
  # Its ranks start through test_lib.sh's mpi_launcher (real.mpirun), as every MPI launch of the
  # tests does (under ASan: no LeakSanitizer exit check in the ranks, whose tracer crashes now
  # and then with 8 oversubscribed ranks).
  cat >"$tmp/real/experiment.yaml" <<YAML
engine: real
grid:
  schedules: [dbt.json]
  sizes: {min: 1000, max: 4000, factor: 2}
  ranks: [8]
real: {backend: mpi, iters: 2, warmup: 1, mpirun: $(mpi_yaml)}
YAML
  if run timeout 180 "$bin" exp run "$tmp/real/experiment.yaml" -q; then
    r="$tmp/real/records.jsonl"
    check '[ "$(wc -l <"$r")" -eq 2 ] && [ "$(grep -c "\"algorithm\":\"dbt@dbt.json\".*\"wrong\":0" "$r")" -eq 2 ]' \
      "exp engine real with grid.schedules: $(cat "$r")"
  fi
  expect_error "written for 8 ranks; the job has 4" timeout 120 "${mpi[@]}" -np 4 "$bench" --schedule "$tmp/dbt.json" -n 1 -w 0
else
  echo "schedule-file: no topocoll-bench or mpirun in this build: the bench part is skipped"
fi

# --- MSCCL XML (algorithms/ir/msccl_xml.hpp): size-generic, the same path ---------------------
# ring on 8 GPUs exported at 1M elements: 16 chunks per loop, so it runs at every multiple of 16.
run "$bin" schedule export --topology pcie-8gpu --algorithm ring --count 1M --format msccl -o "$tmp/ring.xml"
check 'grep -q "nchunksperloop=\"16\"" "$tmp/ring.xml"' "export --format msccl: $(head -c 200 "$tmp/ring.xml")"
run "$bin" verify --schedule "$tmp/ring.xml" --count 64K && check 'grep -q " OK$" "$tmp/out"' "verify of the exported ring.xml"
run "$bin" verify --schedule "$src/algorithms/testdata/msccl/ring_8_1.xml" --count 1M &&
  check 'grep -q " OK$" "$tmp/out"' "verify of msccl-tools' ring_8_1.xml"
expect_error "ring.xml: nchunksperloop=\"16\": count 100 is not a positive multiple of 16" \
  "$bin" verify --schedule "$tmp/ring.xml" --count 100
one_line "verify of an XML at a count it cannot take"
expect_error "a size-generic MSCCL XML file: expected --count N" "$bin" verify --schedule "$tmp/ring.xml"
for engine in analytic simgrid; do
  if run "$bin" sim --topology pcie-8gpu --schedule "$tmp/ring.xml" -b 4M -e 4M --engine "$engine" --format csv --no-nccl-model; then
    xml_t=$(grep -v '^engine' "$tmp/out" | cut -d, -f10)
    run "$bin" sim --topology pcie-8gpu --algorithm ring -b 4M -e 4M --engine "$engine" --format csv --no-nccl-model
    own=$(grep -v '^engine' "$tmp/out" | cut -d, -f10)
    check '[ -n "$own" ] && [ "$xml_t" = "$own" ]' "sim $engine: ring.xml $xml_t us vs ring $own us"
  fi
done
# In a sweep: the sizes whose count is not a multiple of 16 are not run, said in the table.
if run "$bin" sim --topology pcie-8gpu --schedule "$tmp/ring.xml" -b 1000 -e 16000 -f 2 --no-nccl-model; then
  check 'grep -q "1000 not run: counts must be multiples of 16 (count 250)" "$tmp/out" && grep -q "^ *16000 " "$tmp/out"' \
    "sim sweep with an XML file: $(grep -v '^#' "$tmp/out" | head -4)"
fi
# Hand-broken: gpu 3's first rrc (receive and reduce) made an r (receive): a contribution is lost.
awk 'BEGIN{g=-1} /<gpu id="3"/{g=3} g==3 && !done && /type="rrc"/{sub(/type="rrc"/, "type=\"r\""); done=1} {print}' \
  "$tmp/ring.xml" >"$tmp/broken-ring.xml"
"$bin" verify --schedule "$tmp/broken-ring.xml" --count 64K >"$tmp/out" 2>&1
rc=$?
check '[ $rc -eq 1 ] && grep -q "FAIL missing contribution" "$tmp/out"' "verify of the broken ring.xml: exit $rc $(cat "$tmp/out")"
expect_error "the verifier refuses it at count 16: missing contribution" "$bin" sim --topology pcie-8gpu --schedule "$tmp/broken-ring.xml"
one_line "sim of the broken ring.xml"
expect_error "the verifier refuses it at count 16: missing contribution" \
  "$bin" sim --topology pcie-8gpu --schedule "$tmp/broken-ring.xml" --engine simgrid
sed 's/type="rrc"/type="rrx"/' "$tmp/ring.xml" >"$tmp/bad-type.xml"
expect_error 'type="rrx": expected an MSCCL step type' "$bin" sim --topology pcie-8gpu --schedule "$tmp/bad-type.xml"
one_line "sim of an XML with an unknown step type"
head -n 5 "$tmp/ring.xml" >"$tmp/truncated.xml"
expect_error "truncated.xml: not well-formed XML" "$bin" verify --schedule "$tmp/truncated.xml" --count 16
one_line "verify of a truncated XML"
expect_error "MSCCL XML has no in-network reduction" \
  "$bin" schedule export --topology dgx-h100 --algorithm nvls --count 1M --format msccl -o "$tmp/nvls.xml"
check '[ ! -e "$tmp/nvls.xml" ]' "a refused export leaves no file"
expect_error "--format yaml: expected json (topocoll's schedule JSON) or msccl (MSCCL XML)" \
  "$bin" schedule export --topology pcie-8gpu --algorithm ring --count 16 --format yaml
one_line "schedule export --format yaml"
if [ -x "$bench" ] && command -v mpirun >/dev/null; then
  for backend in "${backends[@]}"; do
    launch_for "$backend"
    if timeout 120 "${launch[@]}" -np 8 "$bench" --backend "$backend" --topology pcie-8gpu --schedule "$tmp/ring.xml" \
      -b 4096 -e 8192 -f 2 -n 2 -w 1 >"$tmp/out" 2>"$tmp/err"; then
      rows=$(grep -v '^#' "$tmp/out")
      # Two blocks (mpi, the file), rows at 4096 and 8192 B (counts 1024, 2048), #wrong 0 in and out of place.
      check '[ "$(echo "$rows" | wc -l)" -eq 4 ] && [ -z "$(echo "$rows" | awk '\''$9 != "0" || $13 != "0"'\'')" ]' \
        "bench --backend $backend --schedule ring.xml: $rows"
    else
      fail "bench --backend $backend --schedule ring.xml: exit $? ($(head -c 400 "$tmp/err"))"
    fi
    timeout 120 "${launch[@]}" -np 8 "$bench" --backend "$backend" --topology pcie-8gpu --schedule "$tmp/broken-ring.xml" \
      -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    check '[ $rc -eq 2 ] && [ "$(grep -c "topocoll-bench: error: .*the verifier refuses it at count 16: missing contribution" "$tmp/err")" -eq 1 ]' \
      "bench --backend $backend of the broken ring.xml: exit $rc, $(head -c 400 "$tmp/err")"
  done
fi

summary schedule-file
