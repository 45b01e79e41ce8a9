#!/bin/sh
# ctest python_test: the Python package's tests (pytest on python/tests) and the notebook-style
# example (experiments/python-api/example.py), against the INSTALLED package. Exit 77 (ctest's
# skip) when `import topocoll` or pytest is not available: scripts/setup installs both.
#   python/run_tests.sh SOURCE_DIR
set -eu
src=$1
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"  # not the source tree: the import must find the installed package
if ! "$py" -c "import topocoll" 2>"$work/import.err"; then
  echo "python_test: skipped: the topocoll Python package is not installed ($(tail -1 "$work/import.err")); scripts/setup installs it (docs/python.md)"
  exit 77
fi
if ! "$py" -c "import pytest" 2>/dev/null; then
  echo "python_test: skipped: pytest is not installed (pip install -r python/requirements.txt)"
  exit 77
fi
"$py" -c "import topocoll, sys; print('python_test: topocoll from', topocoll.__file__)"
"$py" -m pytest -q -p no:cacheprovider "$src/python/tests"
"$py" "$src/experiments/python-api/example.py" >"$work/example.out"
grep -q "python-ring" "$work/example.out" || { echo "python_test: the example printed no python-ring row" >&2; cat "$work/example.out"; exit 1; }
echo "python_test: example ran ($(wc -l <"$work/example.out") lines)"
