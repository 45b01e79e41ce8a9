#!/usr/bin/env bash
# Tests of `topocoll exp`: a tiny spec runs, a rerun skips everything, an interrupted file
# resumes to the same records, a fresh run reproduces them exactly, provenance is right, and bad
# specs exit 2 with one line naming the problem. With topocoll-bench and mpirun: a tiny real run.
# Usage: exp_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
src="$2"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
lines() { wc -l <"$1" | tr -d ' '; }

mkdir -p "$tmp/tiny"
# 2 clusters x 4 sizes x (2 algorithms + the NCCL model) = 24 points.
cat >"$tmp/tiny/experiment.yaml" <<'EOF'
description: tiny CI spec
engine: analytic
grid:
  topologies: [dgx-h100]
  nodes: [1, 2]
  fabric: rail-fat-tree
  algorithms: [ring, dbt]
  sizes: {min: 1K, max: 64K, factor: 4}
  channels: [2]
EOF

# --- a run, and its records -----------------------------------------------------------------
"$bin" exp run "$tmp/tiny/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 0 ]' "exp run tiny: nonzero exit ($(head -c 300 "$tmp/err"))"
rec="$tmp/tiny/records.jsonl"
check '[ "$(lines "$rec")" = 24 ]' "tiny: $(lines "$rec") records, expected 24"
check 'grep -q "exp: 24/24 points (100%)" "$tmp/err"' "tiny: no plain progress line '24/24 points (100%)' on a non-TTY stderr: $(cat "$tmp/err")"
check '[ "$(grep -c "\"kind\":\"model\"" "$rec")" = 8 ]' "tiny: expected 8 nccl-model rows"
check '[ "$(grep -c "\"kind\":\"simulated\"" "$rec")" = 16 ]' "tiny: expected 16 simulated rows"
hash=$(sha256sum "$tmp/tiny/experiment.yaml" | cut -d' ' -f1)
check '[ "$(grep -c "\"spec_hash\":\"sha256:$hash\"" "$rec")" = 24 ]' "tiny: spec_hash is not sha256:$hash in every record"
check '[ "$(grep -c "\"experiment\":\"tiny\"" "$rec")" = 24 ]' "tiny: experiment name 'tiny' missing"
check '[ "$(grep -c "\"commit\":\"" "$rec")" = 24 ]' "tiny: commit missing"
check 'grep -q "\"point\":\"dgx-h100|nodes=2|fabric=rail-fat-tree|dtype=float|channels=2|dbt|65536|rep=0\"" "$rec"' \
  "tiny: the point key of dbt at 64 KiB on 2 nodes is not as documented"
check 'grep "\"nodes\":2" "$rec" | grep -q "\"ranks\":16"' "tiny: 2 DGX-H100 nodes should have 16 ranks"
# The records are the simulator's: the same point from `topocoll sim` has the same time.
sim_time=$("$bin" sim --topology dgx-h100 --nodes 2 --fabric rail-fat-tree --algorithm dbt -b 64K -e 64K --channels 2 --format jsonl \
  --no-nccl-model | sed 's/.*"time_us":\([^,]*\),.*/\1/')
exp_time=$(grep '|dbt|65536|' "$rec" | grep '"nodes":2' | sed 's/.*"time_us":\([^,]*\),.*/\1/')
check '[ -n "$sim_time" ] && [ "$sim_time" = "$exp_time" ]' "tiny: exp time $exp_time != topocoll sim time $sim_time"

# --- a rerun skips everything --------------------------------------------------------------
cp "$rec" "$tmp/first.jsonl"
"$bin" exp run "$tmp/tiny/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 0 ]' "rerun: nonzero exit"
check 'cmp -s "$rec" "$tmp/first.jsonl"' "rerun: the records file changed"
check 'grep -q "24 points, 24 already in" "$tmp/err"' "rerun: did not report 24 points already written: $(cat "$tmp/err")"

# --- an interrupted file resumes -------------------------------------------------------------
head -n 10 "$tmp/first.jsonl" >"$rec"
sed -n 11p "$tmp/first.jsonl" | head -c 57 >>"$rec"  # a partial 11th line, no newline
"$bin" exp run "$tmp/tiny/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 0 ]' "resume: nonzero exit ($(head -c 300 "$tmp/err"))"
check 'grep -q "discarded a partial last line (57 bytes)" "$tmp/err"' "resume: partial line not reported: $(head -c 300 "$tmp/err")"
check 'grep -q "24 points, 10 already in" "$tmp/err"' "resume: expected 10 points already written"
check '[ "$(lines "$rec")" = 24 ]' "resume: $(lines "$rec") records, expected 24"
"$bin" exp compare "$tmp/first.jsonl" "$rec" >"$tmp/out" 2>&1
rc=$?
check '[ $rc -eq 0 ]' "resume: records differ from the uninterrupted run: $(head -c 600 "$tmp/out")"
nodate() { sed 's/"date":"[^"]*"//' "$1"; }
check '[ "$(nodate "$rec" | md5sum)" = "$(nodate "$tmp/first.jsonl" | md5sum)" ]' \
  "resume: the resumed file is not line for line the uninterrupted one (date aside)"

# --- a fresh run elsewhere reproduces exactly; compare notices a difference -------------------
"$bin" exp run "$tmp/tiny/experiment.yaml" -o "$tmp/again" --fresh -q >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 0 ] && [ ! -s "$tmp/err" ]' "fresh -q: exit or stderr not quiet: $(cat "$tmp/err")"
"$bin" exp compare "$tmp/first.jsonl" "$tmp/again/records.jsonl" >"$tmp/out"
rc=$?
check '[ $rc -eq 0 ]' "fresh run does not reproduce: $(head -c 600 "$tmp/out")"
sed '3s/"time_us":[0-9.e+-]*/"time_us":1.5/' "$tmp/first.jsonl" >"$tmp/changed.jsonl"
"$bin" exp compare "$tmp/first.jsonl" "$tmp/changed.jsonl" >"$tmp/out"
rc=$?
check '[ $rc -eq 1 ] && grep -q "1 differ" "$tmp/out"' "compare: a changed time_us was not reported: $(tail -1 "$tmp/out")"
head -n 23 "$tmp/first.jsonl" >"$tmp/short.jsonl"
"$bin" exp compare "$tmp/first.jsonl" "$tmp/short.jsonl" >"$tmp/out"
rc=$?
check '[ $rc -eq 1 ] && grep -q "1 only in the first" "$tmp/out"' "compare: a missing point was not reported"

# --- a changed spec or a broken file is not silently mixed -------------------------------------
echo "# edited" >>"$tmp/tiny/experiment.yaml"
"$bin" exp run "$tmp/tiny/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q "another version of the spec" "$tmp/err"' \
  "changed spec: expected exit 2 and one line about another version: $(cat "$tmp/err")"
sed -i '$d' "$tmp/tiny/experiment.yaml"
{ head -n 3 "$tmp/first.jsonl"; echo '{"broken": '; tail -n +4 "$tmp/first.jsonl"; } >"$rec"
"$bin" exp run "$tmp/tiny/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && grep -q "records.jsonl:4: not a record" "$tmp/err"' "broken line 4: expected exit 2 naming line 4: $(cat "$tmp/err")"

# --- another collective: nccl-tests sizes, the collective in every record, sim's numbers ----------
mkdir -p "$tmp/gather"
# 1 cluster x 3 sizes x (1 algorithm + the NCCL model) = 6 points; 8 B over 16 ranks has no
# element per rank: 4 records, and a note.
cat >"$tmp/gather/experiment.yaml" <<'EOF'
engine: analytic
collective: allgather
grid:
  topologies: [dgx-h100]
  nodes: [2]
  algorithms: allgather-ring
  sizes: {min: 8, max: 64K, factor: 90}
EOF
"$bin" exp run "$tmp/gather/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 0 ]' "exp run allgather: nonzero exit ($(head -c 300 "$tmp/err"))"
grec="$tmp/gather/records.jsonl"
check '[ "$(lines "$grec")" = 4 ] && [ "$(grep -c "\"collective\":\"allgather\"" "$grec")" = 4 ]' \
  "allgather: expected 4 allgather records: $(cat "$grec")"
check 'grep -q "allgather of 8 bytes on 16 ranks: fewer elements than ranks: no records" "$tmp/err"' \
  "allgather: no note for the empty size: $(cat "$tmp/err")"
# 720 B: 180 floats, 11 per rank, 704 B received; the same time as `topocoll sim`.
sim_line=$("$bin" sim --topology dgx-h100 --nodes 2 --collective allgather --algorithm allgather-ring -b 720 -e 720 --format jsonl |
  grep '"kind":"simulated"')
exp_line=$(grep '|allgather-ring|720|' "$grec")
time_of() { sed 's/.*"time_us":\([^,]*\),.*/\1/'; }
check 'echo "$exp_line" | grep -q "\"size_bytes\":704," && echo "$exp_line" | grep -q "\"count\":11,"' \
  "allgather: the 720 B point is not 704 B / 11 elements: $exp_line"
check '[ -n "$sim_line" ] && [ "$(echo "$sim_line" | time_of)" = "$(echo "$exp_line" | time_of)" ]' \
  "allgather: exp and sim times differ: $exp_line / $sim_line"

# --- bad specs: exit 2, one line, the right words ----------------------------------------------
# bad NAME EXPECTED_SUBSTRING: the spec on stdin.
bad() {
  local name="$1" want="$2"
  mkdir -p "$tmp/bad/$name"
  cat >"$tmp/bad/$name/experiment.yaml"
  "$bin" exp run "$tmp/bad/$name/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 2 ]; then fail "bad spec $name: exit $rc, expected 2 ($(head -c 300 "$tmp/err"))"; return; fi
  if [ "$(lines "$tmp/err")" -ne 1 ]; then fail "bad spec $name: $(lines "$tmp/err") lines on stderr: $(cat "$tmp/err")"; return; fi
  if ! grep -qF -- "$want" "$tmp/err"; then fail "bad spec $name: '$(cat "$tmp/err")' lacks '$want'"; return; fi
  if [ -e "$tmp/bad/$name/records.jsonl" ]; then fail "bad spec $name: a records file was written"; return; fi
  ok
}
grid='grid: {topologies: [dgx-h100], algorithms: [ring], sizes: {min: 8, max: 1K}}'
bad unknown-key "experiment.yaml:2: unknown key 'repetition' in the spec (allowed: description, engine, collective, repetitions," <<EOF
engine: analytic
repetition: 3
$grid
EOF
bad unknown-grid-key "unknown key 'size' in grid (allowed: topologies, nodes, fabric," <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [ring], size: {min: 8, max: 1K}}
EOF
bad unknown-size-key "unknown key 'step' in grid.sizes (allowed: min, max, factor)" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [ring], sizes: {min: 8, max: 1K, step: 2}}
EOF
bad unknown-algorithm "grid.algorithms rign: unknown algorithm, expected one of the allreduce algorithms ring," <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [ring, rign], sizes: {min: 8, max: 1K}}
EOF
bad mpi-simulated "grid.algorithms mpi: MPI_Allreduce is measured only (engine real)" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [mpi], sizes: {min: 8, max: 1K}}
EOF
bad unknown-topology "grid.topologies dgx-z9: unknown topology preset 'dgx-z9'" <<'EOF'
engine: analytic
grid: {topologies: [dgx-z9], algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
bad missing-topology-file "grid.topologies nowhere.xml:" <<'EOF'
engine: analytic
grid: {topologies: [nowhere.xml], algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
bad unknown-engine "engine ns3: unknown engine, expected analytic, simgrid or real" <<EOF
engine: ns3
$grid
EOF
bad empty-algorithms "grid.algorithms is empty: the grid has no points" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [], sizes: {min: 8, max: 1K}}
EOF
bad empty-nodes "grid.nodes is empty: the grid has no points" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], nodes: [], algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
bad bad-size "grid.sizes.min 1X: unknown suffix 'X'" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [ring], sizes: {min: 1X, max: 1K}}
EOF
bad min-over-max "-b 1M is larger than -e 1K: expected min <= max" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [ring], sizes: {min: 1M, max: 1K}}
EOF
bad bad-nodes "grid.nodes 0: expected node counts from 1 to 16384" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], nodes: [0], algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
bad bad-channels "grid.channels many: expected an integer from 1 to 64" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], algorithms: [ring], channels: [many], sizes: {min: 8, max: 1K}}
EOF
bad bad-fabric "unknown fabric 'torus'" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], fabric: torus, algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
bad bad-dtype "grid.sizes / dtypes:" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], dtypes: [float7], algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
bad missing-calibration "calibration nope.json: no such file" <<EOF
engine: analytic
calibration: nope.json
$grid
EOF
bad not-yaml "not valid YAML" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100
EOF
bad bad-protocol "protocol LL64: expected auto, LL, LL128 or Simple" <<EOF
engine: analytic
protocol: LL64
$grid
EOF
bad real-without-ranks "grid: missing key 'ranks' (engine real" <<'EOF'
engine: real
grid: {algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
bad ranks-simulated "grid.ranks: only for engine real" <<'EOF'
engine: analytic
grid: {topologies: [dgx-h100], ranks: [2], algorithms: [ring], sizes: {min: 8, max: 1K}}
EOF
"$bin" exp run "$tmp/does-not-exist.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && grep -q "does-not-exist.yaml: cannot read the experiment spec" "$tmp/err"' "missing spec: $(cat "$tmp/err")"

# --- collective alltoallv: the size axis is grid.matrices ------------------------------------
mkdir -p "$tmp/a2av"
cp "$src/algorithms/testdata/alltoallv/moe-8.csv" "$src/algorithms/testdata/alltoallv/uniform-8.csv" \
  "$src/algorithms/testdata/alltoallv/sym-4.csv" "$tmp/a2av/"
cat >"$tmp/a2av/experiment.yaml" <<'EOF'
engine: analytic
collective: alltoallv
grid:
  topologies: [pcie-8gpu]
  algorithms: [alltoallv-pairwise]
  matrices: [moe-8.csv, uniform-8.csv, sym-4.csv]
  channels: [1, 2]
EOF
# sym-4.csv fits no cluster of this grid (8 ranks): refused before any point.
"$bin" exp run "$tmp/a2av/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -qF ":6: grid.matrices sym-4.csv: a matrix of 4 ranks, and the grid has no job of 4 ranks (pcie-8gpu x nodes -: 8)" "$tmp/err"' \
  "alltoallv: a 4-rank matrix on an 8-rank grid should exit 2 naming both: $(cat "$tmp/err")"
sed -i 's/, sym-4.csv//' "$tmp/a2av/experiment.yaml"
"$bin" exp run "$tmp/a2av/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
r="$tmp/a2av/records.jsonl"
# 2 matrices x 2 channels x 1 algorithm, no NCCL model (NCCL's tuner has none for alltoallv).
check '[ $rc -eq 0 ] && [ "$(lines "$r")" = 4 ]' "alltoallv: exit $rc, $(lines "$r" 2>/dev/null) records, expected 4: $(tail -c 300 "$tmp/err")"
check '[ "$(grep -c "\"collective\":\"alltoallv\"" "$r")" = 4 ]' "alltoallv: records not of collective alltoallv"
check 'grep -qF "\"point\":\"pcie-8gpu|nodes=-|fabric=-|dtype=float|channels=2|alltoallv-pairwise|sizes=moe-8.csv|rep=0\"" "$r"' \
  "alltoallv: the point key names the matrix as written"
sim_time=$("$bin" sim --topology pcie-8gpu --collective alltoallv --sizes "$tmp/a2av/moe-8.csv" --algorithm alltoallv-pairwise \
  --channels 2 --format jsonl | sed 's/.*"time_us":\([^,]*\),.*/\1/')
exp_time=$(grep -F 'channels=2|alltoallv-pairwise|sizes=moe-8.csv' "$r" | sed 's/.*"time_us":\([^,]*\),.*/\1/')
check '[ -n "$sim_time" ] && [ "$sim_time" = "$exp_time" ]' "alltoallv: exp time $exp_time != topocoll sim --sizes time $sim_time"
"$bin" exp run "$tmp/a2av/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
check 'grep -q "4 points, 4 already in" "$tmp/err"' "alltoallv rerun: not skipped: $(cat "$tmp/err")"
bad_a2av() {  # name, expected text; the spec on stdin, in $tmp/a2av
  local name="$1" want="$2"
  cat >"$tmp/a2av/$name.yaml"
  "$bin" exp run "$tmp/a2av/$name.yaml" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -qF -- "$want" "$tmp/err"' \
    "alltoallv $name: expected exit 2 and '$want', got $rc: $(cat "$tmp/err")"
}
bad_a2av with-sizes "grid.sizes: collective alltoallv runs the calls of its size matrices: grid.matrices" <<'EOF'
engine: analytic
collective: alltoallv
grid: {topologies: [pcie-8gpu], algorithms: [alltoallv-pairwise], matrices: [moe-8.csv], sizes: {min: 8, max: 1K}}
EOF
bad_a2av bad-matrix "grid.matrices not-a-matrix.csv: " <<'EOF'
engine: analytic
collective: alltoallv
grid: {topologies: [pcie-8gpu], algorithms: [alltoallv-pairwise], matrices: [not-a-matrix.csv]}
EOF

# --- scripts/plot: figures from the tiny records, byte-identical twice (needs matplotlib) ---------
if python3 -c "import matplotlib" 2>/dev/null; then
  "$src/scripts/plot" "$tmp/first.jsonl" -o "$tmp/fig1" >"$tmp/out" 2>&1
  rc=$?
  "$src/scripts/plot" "$tmp/first.jsonl" -o "$tmp/fig2" >/dev/null 2>&1
  check '[ $rc -eq 0 ]' "plot: exit $rc: $(tail -c 300 "$tmp/out")"
  for f in busbw-vs-size-dgx-h100.png busbw-vs-size-dgx-h100.svg time-vs-gpus-dgx-h100.svg speedup-heatmap-dgx-h100.svg summary.md; do
    check '[ -s "$tmp/fig1/$f" ] && cmp -s "$tmp/fig1/$f" "$tmp/fig2/$f"' "plot: $f missing or not byte-identical on a second run"
  done
  check 'grep -q "| 16 | 2 | float |" "$tmp/fig1/summary.md"' "plot: summary.md lacks the 16-GPU crossover row"
  "$src/scripts/plot" "$tmp/nothing.jsonl" -o "$tmp/fig3" >"$tmp/out" 2>&1
  rc=$?
  check '[ $rc -eq 2 ] && grep -q "nothing.jsonl: no such file or folder" "$tmp/out"' "plot: a missing input should exit 2 naming it"
else
  echo "exp_test: no matplotlib (pip install -r experiments/requirements.txt): scripts/plot not tested"
fi

# --- engine real: a tiny measured run (needs topocoll-bench and mpirun) ------------------------
if [ -x "$1/topocoll-bench" ] && command -v mpirun >/dev/null; then
  mpi_launcher
  mkdir -p "$tmp/real"
  cat >"$tmp/real/experiment.yaml" <<EOF
engine: real
grid: {ranks: [2], algorithms: [ring, mpi], sizes: {min: 8, max: 1K, factor: 8}, channels: [2]}
real: {backend: mpi, iters: 2, warmup: 1, mpirun: $(mpi_yaml)}
EOF
  # 1 ranks value x 2 algorithms x 3 sizes x (out of place, in place) = 12 points.
  "$bin" exp run "$tmp/real/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check '[ $rc -eq 0 ]' "real: nonzero exit: $(tail -c 400 "$tmp/err")"
  r="$tmp/real/records.jsonl"
  check '[ "$(lines "$r")" = 12 ] && [ "$(grep -c "\"kind\":\"measured\"" "$r")" = 12 ]' "real: expected 12 measured records"
  check '[ "$(grep -c "\"wrong\":0" "$r")" = 12 ]' "real: expected 12 records checked bit for bit with wrong 0, got $(grep -c '"wrong":0' "$r")"
  check 'grep -q "\"point\":\"local|ranks=2|backend=mpi|dtype=float|channels=2|ring|512|in-place|rep=0\"" "$r"' "real: point key"
  "$bin" exp run "$tmp/real/experiment.yaml" >"$tmp/out" 2>"$tmp/err"
  check 'grep -q "12 points, 12 already in" "$tmp/err"' "real rerun: not skipped: $(cat "$tmp/err")"
  # All-to-allv: one mpirun with --sizes per matrix, each on its rank count; the symmetric 4-rank
  # matrix in and out of place, the asymmetric 8-rank one out of place only.
  cat >"$tmp/a2av/real.yaml" <<EOF
engine: real
collective: alltoallv
grid: {ranks: [4, 8], algorithms: [alltoallv-pairwise], matrices: [sym-4.csv, moe-8.csv], channels: [2]}
real: {backend: mpi, iters: 2, warmup: 1, mpirun: $(mpi_yaml)}
EOF
  "$bin" exp run "$tmp/a2av/real.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  r="$tmp/a2av/records-real.jsonl"
  check '[ $rc -eq 0 ] && [ "$(lines "$r")" = 3 ] && [ "$(grep -c "\"wrong\":0" "$r")" = 3 ]' \
    "real alltoallv: exit $rc, expected 3 records with wrong 0: $(tail -c 400 "$tmp/err")"
  check 'grep -q "3 points, 0 already in" "$tmp/err"' "real alltoallv: the plan should count 3 points: $(head -c 300 "$tmp/err")"
  "$bin" exp run "$tmp/a2av/real.yaml" >"$tmp/out" 2>"$tmp/err"
  check 'grep -q "3 points, 3 already in" "$tmp/err"' "real alltoallv rerun: not skipped: $(cat "$tmp/err")"
  check 'grep -qF "\"point\":\"local|ranks=4|backend=mpi|dtype=float|channels=2|alltoallv-pairwise|sizes=sym-4.csv|in-place|rep=0\"" "$r"' \
    "real alltoallv: point key"
  cat >"$tmp/real/experiment.yaml" <<EOF
engine: real
grid: {ranks: [2], algorithms: [ring], sizes: {min: 8, max: 1K, factor: 8}, channels: [2]}
real: {backend: carrier-pigeon, iters: 2, warmup: 1, mpirun: $(mpi_yaml)}
EOF
  "$bin" exp run "$tmp/real/experiment.yaml" -o "$tmp/real2" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q "topocoll-bench rejected the grid.*--backend carrier-pigeon" "$tmp/err"' \
    "real bad backend: expected exit 2 with topocoll-bench's message: $(cat "$tmp/err")"
else
  echo "exp_test: no topocoll-bench or mpirun: engine real not tested"
fi

# sim-vs-real-local's calibration script: bad arguments are one line and exit 2, before it measures.
"$src/experiments/sim-vs-real-local/calibrate" --backend tcp >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "expected nothing or --backend mpi|ucx" "$tmp/err"' \
  "calibrate --backend tcp: exit $rc, stderr: $(cat "$tmp/err")"

summary exp_test
