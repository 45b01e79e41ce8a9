#!/usr/bin/env bash
# Golden-output tests of `topocoll sim`: deterministic text compared with committed references
# (simulator/testdata/golden/*.txt). A difference prints the diff and fails.
# Usage: golden_test.sh BUILD_BIN_DIR SOURCE_DIR [--update]
set -u
bin="$1/topocoll"
# The NCCL model reads NCCL_* variables from the environment (as NCCL does): none here.
for v in $(env | sed -n "s/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p"); do unset "$v"; done
dir="$2/simulator/testdata/golden"
update="${3:-}"
passed=0
failed=0

# name | arguments
cases=(
  "h100-2node-analytic|sim --topology dgx-h100 --nodes 2 --algorithm all -b 1K -e 16M -f 16 --engine analytic"
  "pcie8-ring-analytic|sim --topology pcie-8gpu --algorithm ring,dbt -b 8 -e 64M -f 64 --engine analytic"
  "a100-3node-csv|sim --topology dgx-a100 --nodes 3 --fabric fat-tree --algorithm ring,hierarchical -b 4K -e 4M -f 32 --format csv --no-nccl-model"
)
if "$bin" sim --topology pcie-8gpu --algorithm ring -b 1K -e 1K --engine simgrid --no-nccl-model >/dev/null 2>&1; then
  cases+=("h100-1node-simgrid|sim --topology dgx-h100 --algorithm ring,dbt -b 1K -e 16M -f 16 --engine simgrid --no-nccl-model")
fi

for c in "${cases[@]}"; do
  name="${c%%|*}"
  args="${c#*|}"
  # shellcheck disable=SC2086
  out=$("$bin" $args 2>&1)
  if [ "$update" = "--update" ]; then
    printf '%s\n' "$out" >"$dir/$name.txt"
    echo "updated $name"
    continue
  fi
  if [ ! -f "$dir/$name.txt" ]; then
    echo "FAIL: $name: no reference $dir/$name.txt (run with --update to create it)"
    failed=$((failed + 1))
  elif diff -u "$dir/$name.txt" <(printf '%s\n' "$out") >/tmp/golden-$name.diff; then
    passed=$((passed + 1))
  else
    echo "FAIL: $name differs from its reference:"
    head -40 /tmp/golden-$name.diff
    failed=$((failed + 1))
  fi
done
echo "golden: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
