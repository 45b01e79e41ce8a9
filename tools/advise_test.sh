#!/usr/bin/env bash
# `topocoll advise`: one screen per topology, its ranges cover the sweep, the environment lines
# are NCCL's variables, the diagnostics of topo check are in it, and bad input exits 2.
# Usage: advise_test.sh BIN_DIR REPO_DIR
set -u
bin="$1"
repo="$2"
. "$repo/tools/test_lib.sh"
topocoll="$bin/topocoll"

"$topocoll" advise --topology dgx-a100 --nodes 2 >"$tmp/a.out" 2>"$tmp/err"
check "[ $? -eq 0 ]" "advise dgx-a100 x 2 failed: $(cat "$tmp/err")"
check "[ \$(wc -l <\"$tmp/a.out\") -le 24 ]" "advise: more than one screen (24 lines): $(wc -l <"$tmp/a.out")"
check "grep -q '^ *8B-' \"$tmp/a.out\" && grep -qE -- '-1G |1G ' \"$tmp/a.out\"" "advise: the ranges do not run from 8 B to 1 GiB"
check "! grep -E '^ ' \"$tmp/a.out\" | grep -vqE 'NCCL_ALGO=(Tree|Ring|NVLS|NVLSTree|CollnetDirect) NCCL_PROTO=(LL|LL128|Simple)|stock NCCL'" \
  "advise: a range without an NCCL environment or a keep-stock note"
check "grep -q 'topology diagnostics' \"$tmp/a.out\" && grep -q '0 warnings' \"$tmp/a.out\"" "advise: no diagnostics section"
"$topocoll" advise --topology pcie-8gpu -b 1K -e 1M >"$tmp/p.out" 2>"$tmp/err"
check "grep -q 'WARN \[no-p2p\]' \"$tmp/p.out\" && grep -q 'WARN \[nic-shared\]' \"$tmp/p.out\"" "advise pcie-8gpu: the P2P and NIC diagnostics are missing"

"$topocoll" advise --topology dgx-a100 --collective alltoall >/dev/null 2>"$tmp/err"
check "[ $? -eq 2 ] && grep -q 'collective alltoall: advise covers allreduce' \"$tmp/err\"" "advise --collective alltoall: $(cat "$tmp/err")"
"$topocoll" advise --topology no-such-preset >/dev/null 2>"$tmp/err"
check "[ $? -eq 2 ] && [ \$(wc -l <\"$tmp/err\") -eq 1 ]" "advise on an unknown topology: one line, exit 2: $(cat "$tmp/err")"
"$topocoll" advise --topology dgx-a100 -b 1M -e 1K >/dev/null 2>"$tmp/err"
check "[ $? -eq 2 ]" "advise -b 1M -e 1K: exit 2 expected: $(cat "$tmp/err")"

summary advise_test
