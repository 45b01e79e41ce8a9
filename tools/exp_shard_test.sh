#!/usr/bin/env bash
# Tests of `topocoll exp run` spread over processes (docs/experiments.md, "Sweeps over
# processes"): two shards started together, shards from the launcher's environment, a killed
# shard resumed, `exp merge` and `exp compare` merging finished parts, each against a
# single-process run (`exp compare` says same, and the file is line for line the same, dates
# aside); bad --shard values, a shard count that does not match the store, engine real: exit 2,
# one line. With mpirun: `mpirun -np 2 topocoll exp run`.
# Usage: exp_shard_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
src="$2"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
lines() { wc -l <"$1" | tr -d ' '; }
nodate() { sed 's/"date":"[^"]*"//' "$1" | md5sum; }
# The launcher variables of the job running this test must not pick the shard.
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_STEP_NUM_TASKS \
  SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_STEP

mkdir -p "$tmp/spec"
# 2 clusters x 4 sizes x (2 algorithms x 2 repetitions + the NCCL model) = 40 points.
spec="$tmp/spec/experiment.yaml"
cat >"$spec" <<'EOF'
description: shard CI spec
engine: analytic
repetitions: 2
grid:
  topologies: [dgx-h100]
  nodes: [1, 2]
  fabric: rail-fat-tree
  algorithms: [ring, dbt]
  sizes: {min: 1K, max: 64K, factor: 4}
  channels: [2]
EOF
"$bin" exp run "$spec" -o "$tmp/one" -q >/dev/null 2>"$tmp/err"
check '[ $? -eq 0 ] && [ "$(lines "$tmp/one/records.jsonl")" = 40 ]' "one process: $(cat "$tmp/err")"
one="$tmp/one/records.jsonl"

# same_as_one DIR WHAT: DIR/records.jsonl is the single-process file (compare: same; dates aside, byte for byte)
# and no shard file is left beside it.
same_as_one() {
  local d=$1 what=$2
  "$bin" exp compare "$one" "$d/records.jsonl" >"$tmp/cmp" 2>&1
  check '[ $? -eq 0 ] && grep -q ": same$" "$tmp/cmp"' "$what: exp compare: $(tail -3 "$tmp/cmp")"
  check '[ "$(nodate "$d/records.jsonl")" = "$(nodate "$one")" ]' "$what: not line for line the single-process file"
  check '[ -z "$(ls "$d" | grep -v "^records.jsonl$")" ]' "$what: files left beside records.jsonl: $(ls "$d")"
}

# --- two shards started together: the last to finish merges -----------------------------------
"$bin" exp run "$spec" -o "$tmp/two" --shard 0/2 >"$tmp/out0" 2>"$tmp/err0" &
pid=$!
"$bin" exp run "$spec" -o "$tmp/two" --shard 1/2 >"$tmp/out1" 2>"$tmp/err1"
rc1=$?
wait $pid
rc0=$?
check '[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]' "two shards: exit $rc0 / $rc1: $(cat "$tmp/err0" "$tmp/err1" | head -c 400)"
check 'grep -q "shard 0/2 (--shard): 20 of 40 points" "$tmp/err0"' "shard 0/2: no start line: $(head -2 "$tmp/err0")"
check 'cat "$tmp/out0" "$tmp/out1" | grep -q "merged 2 shards: 40 records"' "two shards: nobody merged: $(cat "$tmp/out0" "$tmp/out1")"
same_as_one "$tmp/two" "two shards"
# A rerun, sharded or not, writes nothing; a shard rerun alone leaves a done marker without
# records, which a later run removes.
"$bin" exp run "$spec" -o "$tmp/two" --shard 1/2 >"$tmp/out" 2>"$tmp/err"
check '[ $? -eq 0 ] && grep -q "20 of 40 points, 20 already written" "$tmp/err"' "shard rerun: $(cat "$tmp/err")"
"$bin" exp run "$spec" -o "$tmp/two" >"$tmp/out" 2>"$tmp/err"
check '[ $? -eq 0 ] && grep -q "40 points, 40 already in" "$tmp/err"' "one-process rerun: $(cat "$tmp/err")"
same_as_one "$tmp/two" "reruns"

# --- shards from the launcher's environment, one after the other -----------------------------
for i in 0 1 2; do
  OMPI_COMM_WORLD_RANK=$i OMPI_COMM_WORLD_SIZE=3 "$bin" exp run "$spec" -o "$tmp/ompi" >"$tmp/out" 2>"$tmp/err"
  check '[ $? -eq 0 ] && grep -q "shard $i/3 (OMPI_COMM_WORLD_RANK/SIZE)" "$tmp/err"' "OMPI rank $i: $(head -c 300 "$tmp/err")"
done
same_as_one "$tmp/ompi" "OMPI_COMM_WORLD_RANK/SIZE"
for id in 7 9; do  # sbatch --array=7-9:2
  SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=7 SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=2 \
    "$bin" exp run "$spec" -o "$tmp/array" >"$tmp/out" 2>"$tmp/err"
  check '[ $? -eq 0 ] && grep -q "shard $(((id - 7) / 2))/2 (SLURM_ARRAY_TASK_ID)" "$tmp/err"' "array task $id: $(head -c 300 "$tmp/err")"
done
same_as_one "$tmp/array" "SLURM_ARRAY_TASK_ID"
# A batch script's own environment (SLURM_PROCID=0, the job's SLURM_NTASKS, no step) is one process.
SLURM_PROCID=0 SLURM_NTASKS=4 "$bin" exp run "$spec" -o "$tmp/batch" -q >/dev/null 2>"$tmp/err"
check '[ $? -eq 0 ] && [ "$(lines "$tmp/batch/records.jsonl")" = 40 ]' "batch script env: not one process: $(cat "$tmp/err")"

# --- a killed shard resumes --------------------------------------------------------------------
# Shard 1's whole part, made where shard 0 is missing (so nothing merges), then cut as a kill
# leaves it: the first 5 records and half of the 6th, no done marker.
"$bin" exp run "$spec" -o "$tmp/scratch" --shard 1/2 -q >/dev/null 2>&1
part="$tmp/scratch/records.shard-1-of-2.jsonl"
check '[ "$(lines "$part")" -ge 10 ] && [ -e "$tmp/scratch/records.shard-1-of-2.done" ]' "shard 1 alone: no part or marker"
"$bin" exp run "$spec" -o "$tmp/killed" --shard 0/2 -q >"$tmp/out" 2>&1
check 'grep -q "shard 1 not yet" "$tmp/out"' "shard 0 alone: does not say it waits for shard 1: $(cat "$tmp/out")"
{ head -n 5 "$part"; sed -n 6p "$part" | head -c 40; } >"$tmp/killed/records.shard-1-of-2.jsonl"
# Meanwhile one process, or another shard count, is refused: the store is not theirs.
"$bin" exp run "$spec" -o "$tmp/killed" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q "parts of a 2-shard run (shard 1 not done), this run is one process" "$tmp/err"' \
  "one process over an unfinished 2-shard store: exit $rc: $(cat "$tmp/err")"
"$bin" exp run "$spec" -o "$tmp/killed" --shard 0/3 >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q "parts of a 2-shard run (shard 1 not done), this run is shard 0/3 (--shard): run it with --shard I/2" "$tmp/err"' \
  "shard 0/3 over a 2-shard store: exit $rc: $(cat "$tmp/err")"
cp -r "$tmp/killed" "$tmp/killed-copy"
"$bin" exp run "$spec" -o "$tmp/killed-copy" --shard 0/3 --fresh -q >"$tmp/out" 2>"$tmp/err"
check '[ $? -eq 0 ] && [ -e "$tmp/killed-copy/records.shard-0-of-3.done" ] && [ -z "$(ls "$tmp/killed-copy" | grep -- -of-2)" ]' \
  "shard 0/3 --fresh over a 2-shard store: did not start over: $(cat "$tmp/err") $(ls "$tmp/killed-copy")"
"$bin" exp merge "$spec" -o "$tmp/killed" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && grep -q "shard 1 of 2 is not done (no records.shard-1-of-2.done)" "$tmp/err"' "merge of an unfinished run: exit $rc: $(cat "$tmp/err")"
"$bin" exp compare "$one" "$tmp/killed/records.jsonl" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && grep -q "unfinished 2-shard run" "$tmp/err"' "compare of an unfinished run: exit $rc: $(cat "$tmp/err")"
"$bin" exp run "$spec" -o "$tmp/killed" --shard 1/2 >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 0 ] && grep -q "discarded a partial last line (40 bytes)" "$tmp/err" && grep -q "points, 5 already written" "$tmp/err"' \
  "killed shard resumed: exit $rc: $(head -c 400 "$tmp/err")"
same_as_one "$tmp/killed" "killed shard resumed"

# --- finished parts nobody merged: exp compare merges them, and so does exp merge ---------------
"$bin" exp run "$spec" -o "$tmp/late" --shard 0/2 -q >/dev/null 2>&1
cp "$tmp/scratch/records.shard-1-of-2.jsonl" "$tmp/scratch/records.shard-1-of-2.done" "$tmp/late/"
"$bin" exp compare "$one" "$tmp/late/records.jsonl" >"$tmp/out" 2>"$tmp/err"
check '[ $? -eq 0 ] && grep -q "merged the 2 shards. parts" "$tmp/err"' "compare did not merge: $(cat "$tmp/out" "$tmp/err")"
same_as_one "$tmp/late" "merged by exp compare"
"$bin" exp run "$spec" -o "$tmp/late2" --shard 0/2 -q >/dev/null 2>&1
cp "$tmp/scratch/records.shard-1-of-2.jsonl" "$tmp/scratch/records.shard-1-of-2.done" "$tmp/late2/"
"$bin" exp merge "$spec" -o "$tmp/late2" >"$tmp/out" 2>"$tmp/err"
check '[ $? -eq 0 ] && grep -q "exp merge: 2 shards: 40 records" "$tmp/out"' "exp merge: $(cat "$tmp/out" "$tmp/err")"
same_as_one "$tmp/late2" "exp merge"
"$bin" exp merge "$spec" -o "$tmp/late2" >"$tmp/out" 2>&1
check '[ $? -eq 0 ] && grep -q "nothing to merge" "$tmp/out"' "exp merge again: $(cat "$tmp/out")"

# --- a single-process file resumed by shards; --fresh shards replace it -------------------------
head -n 17 "$one" >"$tmp/half.jsonl"
mkdir -p "$tmp/mixed" && cp "$tmp/half.jsonl" "$tmp/mixed/records.jsonl"
for i in 0 1; do "$bin" exp run "$spec" -o "$tmp/mixed" --shard $i/2 -q >/dev/null 2>"$tmp/err" || fail "mixed $i: $(cat "$tmp/err")"; done
same_as_one "$tmp/mixed" "shards after a single-process start"
sed -i '1s/"time_us":[0-9.e+-]*/"time_us":1.5/' "$tmp/mixed/records.jsonl"  # a stale value, replaced by --fresh
for i in 1 0; do "$bin" exp run "$spec" -o "$tmp/mixed" --shard $i/2 --fresh -q >/dev/null 2>"$tmp/err" || fail "fresh $i: $(cat "$tmp/err")"; done
same_as_one "$tmp/mixed" "--fresh shards"

# --- mpirun -np 2 topocoll exp run ---------------------------------------------------------------
if command -v mpirun >/dev/null; then
  mpi_launcher
  "${mpi[@]}" -np 2 "$bin" exp run "$spec" -o "$tmp/mpirun" -q >"$tmp/out" 2>"$tmp/err"
  check '[ $? -eq 0 ] && grep -q "merged 2 shards: 40 records" "$tmp/out"' "mpirun -np 2: $(cat "$tmp/out" "$tmp/err" | head -c 400)"
  same_as_one "$tmp/mpirun" "mpirun -np 2"
else
  echo "exp_shard_test: no mpirun: mpirun -np 2 topocoll exp run not tested"
fi

# --- alltoallv: size matrices as the size axis, sharded the same ---------------------------------
mkdir -p "$tmp/a2av"
cp "$src/algorithms/testdata/alltoallv/moe-8.csv" "$src/algorithms/testdata/alltoallv/uniform-8.csv" "$tmp/a2av/"
cat >"$tmp/a2av/experiment.yaml" <<'EOF'
engine: analytic
collective: alltoallv
grid:
  topologies: [pcie-8gpu]
  algorithms: [alltoallv-pairwise]
  matrices: [moe-8.csv, uniform-8.csv]
  channels: [1, 2]
EOF
"$bin" exp run "$tmp/a2av/experiment.yaml" -o "$tmp/a2av-one" -q >/dev/null 2>"$tmp/err"
check '[ $? -eq 0 ] && [ "$(lines "$tmp/a2av-one/records.jsonl")" = 4 ]' "alltoallv one process: $(cat "$tmp/err")"
for i in 1 0; do
  "$bin" exp run "$tmp/a2av/experiment.yaml" -o "$tmp/a2av-two" --shard $i/2 >"$tmp/out" 2>"$tmp/err"
  check '[ $? -eq 0 ] && grep -q "shard $i/2 (--shard): 2 of 4 points" "$tmp/err"' "alltoallv shard $i: $(cat "$tmp/err")"
done
"$bin" exp compare "$tmp/a2av-one/records.jsonl" "$tmp/a2av-two/records.jsonl" >"$tmp/out" 2>&1
check '[ $? -eq 0 ] && [ "$(nodate "$tmp/a2av-one/records.jsonl")" = "$(nodate "$tmp/a2av-two/records.jsonl")" ]' \
  "alltoallv shards: not the single-process file: $(cat "$tmp/out")"

# --- bad shards: exit 2, one line ---------------------------------------------------------------
for s in 2/2 1/0 -1/2 1 a/b 0/2/3 ""; do
  "$bin" exp run "$spec" -o "$tmp/bad" --shard "$s" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -qF -- "--shard $s: expected I/N with 0 <= I < N, I counted from 0" "$tmp/err"' \
    "--shard '$s': exit $rc: $(cat "$tmp/err")"
done
OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=2 "$bin" exp run "$spec" -o "$tmp/bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q "OMPI_COMM_WORLD_RANK=2 with OMPI_COMM_WORLD_SIZE=2: expected 0 <= rank < size" "$tmp/err"' \
  "bad OMPI rank: exit $rc: $(cat "$tmp/err")"
SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=2 "$bin" exp run "$spec" -o "$tmp/bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q "not a position in an evenly spaced array" "$tmp/err"' \
  "bad array task: exit $rc: $(cat "$tmp/err")"
check '[ ! -e "$tmp/bad/records.jsonl" ] && [ -z "$(ls "$tmp/bad" 2>/dev/null)" ]' "bad shards wrote files: $(ls "$tmp/bad" 2>/dev/null)"
mkdir -p "$tmp/real"
cat >"$tmp/real/experiment.yaml" <<'EOF'
engine: real
grid: {ranks: [2], algorithms: [ring], sizes: {min: 8, max: 1K, factor: 8}, channels: [2]}
EOF
"$bin" exp run "$tmp/real/experiment.yaml" --shard 1/2 >"$tmp/out" 2>"$tmp/err"
rc=$?
check '[ $rc -eq 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q "shard 1/2 (--shard): engine real is not spread over processes" "$tmp/err"' \
  "engine real sharded: exit $rc: $(cat "$tmp/err")"

summary exp_shard_test
