#!/usr/bin/env bash
# Command-line tests of `topocoll topo`: exit codes, one-line errors, key outputs.
# Usage: cli_test.sh BUILD_BIN_DIR SOURCE_DIR
set -u
bin="$1/topocoll"
src="$2"
data="$src/topologies/testdata"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

# expect_error EXPECTED_SUBSTRING ARGS...: exit 2, exactly one line on stderr containing it, no trace.
expect_error() {
  local want="$1"; shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 2 ]; then fail "topocoll $* : exit $rc, expected 2 ($(head -c 300 "$tmp/err"))"; return; fi
  if [ "$lines" -ne 1 ]; then fail "topocoll $* : $lines lines on stderr, expected 1: $(cat "$tmp/err")"; return; fi
  if ! grep -qF -- "$want" "$tmp/err"; then fail "topocoll $* : stderr '$(cat "$tmp/err")' lacks '$want'"; return; fi
  ok
}

# expect_ok ARGS...: exit 0; output in $tmp/out.
expect_ok() {
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then fail "topocoll $* : exit $rc ($(head -c 300 "$tmp/err"))"; return 1; fi
  ok
}

contains() { if grep -qF -- "$1" "$tmp/out"; then ok; else fail "output of '$2' lacks '$1'"; fi; }

# --- version, and the malloc the command runs with (jemalloc when the build found it) -------
expect_ok --version && contains "topocoll 0.1.0 (malloc: " "--version"
if ldd "$bin" | grep -q libjemalloc; then
  contains "(malloc: jemalloc)" "--version (the binary links libjemalloc)"
else
  contains "(malloc: glibc)" "--version (the binary does not link libjemalloc)"
fi

# --- bad input: flags -------------------------------------------------------------------
expect_error "unknown topology preset 'dgx-z9'" topo show --topology dgx-z9
expect_error "unknown fabric 'torus'" topo show --topology dgx-h100 --nodes 2 --fabric torus
expect_error "--nodes 0: expected a node count from 1 to 16384" topo show --topology dgx-h100 --nodes 0
expect_error "--nodes 20000: expected a node count from 1 to 16384" topo show --topology dgx-h100 --nodes 20000
expect_error "--nodes" topo show --topology dgx-h100 --nodes -3
expect_error "--nodes" topo show --topology dgx-h100 --nodes many
expect_error "--oversubscription 0.5: expected a ratio >= 1" topo show --topology dgx-h100 --nodes 2 --oversubscription 0.5
expect_error "unknown transport 'ib': expected one of hdr, ndr, xdr" sim --topology dgx-h100 --nodes 2 --transport ib
expect_error "unknown ECMP mode 'spray': expected hash or ideal" sim --topology dgx-h100 --nodes 2 --ecmp spray
expect_error "--nics-per-gpu 0: expected 1 to 16" topo show --topology dgx-h100 --nodes 2 --nics-per-gpu 0
expect_ok sim --topology dgx-h100 --nodes 4 --fabric dragonfly --transport slingshot-11 --ecmp ideal --algorithm ring -b 1M -e 1M --no-nccl-model &&
  contains "dragonfly 1:1, transport slingshot-11, ECMP ideal" "sim --fabric dragonfly --transport slingshot-11"
expect_ok sim --topology dgx-h100 --nodes 2 --fabric multi-plane --nics-per-gpu 2 --algorithm ring -b 1M -e 1M --no-nccl-model
expect_error "planes never meet" sim --topology dgx-h100 --nodes 2 --fabric multi-plane --no-pxn --algorithm ring -b 1M -e 1M --no-nccl-model
expect_error "--oversubscription" topo show --topology dgx-h100 --nodes 2 --oversubscription lots
expect_error "--format yaml: expected text or json" topo show --topology dgx-h100 --format yaml
expect_error "--format png: expected dot, simgrid or json" topo export --topology dgx-h100 --format png
expect_error "--from n9/gpu0: no such device" topo path --topology dgx-h100 --from n9/gpu0 --to n0/gpu1
expect_error "topology" topo show

# --- bad input: files --------------------------------------------------------------------
printf '<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0" class="0x030000" link_speed="fast" link_width="16"/>\n  </cpu>\n</system>\n' >"$tmp/bad-speed.xml"
expect_error "bad-speed.xml:3" topo show --topology "$tmp/bad-speed.xml"
printf '<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0"\n</system>\n' >"$tmp/broken.xml"
expect_error "broken.xml:" topo show --topology "$tmp/broken.xml"
printf '<system version="2">\n</system>\n' >"$tmp/v2.xml"
expect_error "v2.xml:1" topo show --topology "$tmp/v2.xml"
printf 'node: dgx-h100\nnodes: [1\n' >"$tmp/broken.yaml"
expect_error "broken.yaml:" topo show --topology "$tmp/broken.yaml"
printf 'node: dgx-h100\nnodez: 4\n' >"$tmp/key.yaml"
expect_error "key.yaml:2: unknown key 'nodez'" topo check --topology "$tmp/key.yaml"
expect_error "/nonexistent.xml" topo show --topology /nonexistent.xml
expect_error "cannot open" topo export --topology dgx-h100 --format dot -o /nonexistent/dir/x.dot

# --- outputs ---------------------------------------------------------------------------
if expect_ok topo show --topology dgx-h100 --nodes 2 --format json; then
  for key in '"nodes": 2' '"gpus": 16' '"nics": 16' '"cpus": 4' '"nvswitches": 8' '"pcie_switches": 16' \
             '"network_switches": 40' '"nvlink": 64' '"network": 272'; do
    contains "$key" "show json"
  done
fi
if expect_ok topo check --topology pcie-8gpu; then
  contains "16 GPU pairs cross NUMA nodes" "check pcie-8gpu"
  contains "0-4 0-5 0-6 0-7 1-4" "check pcie-8gpu"
fi
if expect_ok topo show --topology "$data/ibm-h100x8-dump.xml"; then contains "gpus         8" "show ibm"; fi
if expect_ok topo export --topology dgx-a100 --nodes 2 --format dot -o "$tmp/a.dot"; then
  grep -q "subgraph cluster_n1" "$tmp/a.dot" && ok || fail "dot export lacks node 1's cluster"
fi
if expect_ok topo path --topology dgx-h100 --nodes 2 --from n0/gpu0 --to n1/gpu0; then contains "type NET" "path"; fi
if expect_ok topo --help; then contains "Examples:" "topo --help"; fi
for sub in show check export path; do
  if expect_ok topo "$sub" --help; then contains "Examples:" "topo $sub --help"; fi
done

# --- algorithms, verify, schedule ----------------------------------------------------------
if expect_ok algorithms; then contains "hierarchical-dbt" "algorithms"; fi
if expect_ok verify --topology dgx-h100 --nodes 4 --algorithm all --count 1000 --channels 3; then
  contains "ring" "verify"
  if grep -q "FAIL" "$tmp/out"; then fail "verify all on 4 nodes reports a failure"; else ok; fi
fi
if expect_ok verify --topology pcie-8gpu --algorithm ring,dbt --count 13 --in-place; then contains " OK" "verify in place"; fi
if expect_ok schedule export --topology dgx-a100 --nodes 2 --algorithm dbt --count 100 -o "$tmp/dbt.json"; then
  if expect_ok verify --schedule "$tmp/dbt.json"; then contains "OK" "verify exported schedule"; fi
fi
"$bin" verify --schedule "$src/algorithms/testdata/broken-ring.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "FAIL deadlock" "$tmp/out" && grep -q "0 -> 2 -> 1 -> 0" "$tmp/out"; then ok; else
  fail "broken-ring.json: exit $rc, expected 1 with the deadlock cycle: $(cat "$tmp/out" "$tmp/err")"; fi
# In-network reduction at 1024 ranks (issue 15): one NVLink domain of 1024 GPUs, 128 x 8 with
# NVLS and SHARP as layouts, and 128 DGX H100 (NVLS from the hardware, SHARP assumed).
t0=$(date +%s%N)
if expect_ok verify --layout 1x1024 --nvls --algorithm nvls; then
  grep -qE '^nvls +1024 .* OK$' "$tmp/out" || fail "verify nvls at 1024 ranks: $(cat "$tmp/out")"; fi
t1=$(date +%s%N)
if expect_ok verify --layout 128x8 --nvls --sharp --algorithm nvls-tree,collnet,hierarchical-nvls; then
  [ "$(grep -cE ' 1024 .* OK$' "$tmp/out")" -eq 3 ] || fail "verify 128x8 in-network: $(cat "$tmp/out")"; fi
if expect_ok verify --topology dgx-h100 --nodes 128 --sharp --algorithm nvls-tree,collnet; then
  [ "$(grep -cE ' 1024 .* OK$' "$tmp/out")" -eq 2 ] || fail "verify dgx-h100 x 128 in-network: $(cat "$tmp/out")"; fi
t2=$(date +%s%N)
echo "verify at 1024 ranks: nvls $(( (t1 - t0) / 1000000 )) ms, nvls-tree + collnet (+ hierarchical-nvls) $(( (t2 - t1) / 1000000 )) ms"
# An NVL72 as 18 trays of 4 GPUs in one NVLink domain runs nvls across its nodes.
if expect_ok verify --layout 18x4 --nvls --nvlink-domain 18 --algorithm nvls; then
  grep -qE '^nvls +72 .* OK$' "$tmp/out" || fail "verify nvls on an NVL72 layout: $(cat "$tmp/out")"; fi
if expect_ok verify --topology dgx-h100 --nodes 2 --algorithm nvls,collnet; then
  contains "nvls                     16 not supported: needs one NVLink domain (one node)" "verify nvls on 2 nodes"
  contains "collnet                  16 not supported: needs a fabric whose switches reduce" "verify collnet without SHARP"
fi
if expect_ok verify --topology dgx-a100 --algorithm nvls; then
  contains "not supported: needs NVLS (NVSwitch multicast on GPUs of sm 90 or later" "verify nvls on A100"; fi
expect_error "--layout 12: expected NODESxRANKS_PER_NODE, e.g. 128x8" verify --layout 12
expect_error "--layout 0x8: expected 1 to 1048576 ranks in all" verify --layout 0x8
expect_error "--layout and --topology: give one of them" verify --layout 2x8 --topology dgx-h100
expect_error "--nvlink-domain 19: expected 1 to 18 nodes" verify --layout 18x4 --nvls --nvlink-domain 19
expect_error "--nvlink-domain needs --layout" verify --topology dgx-h100 --nvlink-domain 2
expect_error "unknown algorithm 'rign'" verify --topology dgx-h100 --nodes 2 --algorithm rign
expect_error "--count 1Q: unknown suffix 'Q'" verify --topology dgx-h100 --nodes 2 --count 1Q
expect_error "--count -5" verify --topology dgx-h100 --nodes 2 --count -5
expect_error "--channels 0: expected 1 to 64" verify --topology dgx-h100 --nodes 2 --channels 0
expect_error "unknown data type 'float7'" verify --topology dgx-h100 --nodes 2 --dtype float7
expect_error "--channels x: expected nccl (what stock NCCL runs with here) or 1 to 64" sim --topology pcie-8gpu -b 1K -e 1K --channels x
expect_error "--channels 65: expected nccl" sim --topology pcie-8gpu -b 1K -e 1K --channels 65
expect_error "expected 0 (CollNet off) or 1" sim --topology pcie-8gpu -b 1K -e 1K --nccl-env NCCL_COLLNET_ENABLE=2
# CollNet: NCCL_COLLNET_ENABLE=1 on a fabric with SHARP (--sharp) puts CollNet in the NCCL model's choice.
expect_ok sim --topology dgx-h100 -N 4 --algorithm ring -b 32M -e 32M --sharp --nccl-env NCCL_COLLNET_ENABLE=1 --nccl-env NCCL_ALGO=CollNetDirect,CollNetChain &&
  contains "CollNetChain/Simple" "sim --sharp NCCL_COLLNET_ENABLE=1"
# --channels nccl (the default) runs schedules with NCCL's channels: 24 on one DGX H100.
if expect_ok sim --topology dgx-h100 --algorithm ring -b 1M -e 1M --format jsonl; then
  grep -q '"engine":"analytic".*' "$tmp/out" && grep '"engine":"analytic"' "$tmp/out" | grep -q '"channels":24' ||
    fail "sim default channels: expected 24 on dgx-h100: $(head -c 400 "$tmp/out")"; fi
expect_error "--root 99: expected a rank from 0 to 15" verify --topology dgx-h100 --nodes 2 --root 99
expect_error "verify needs --topology T (with --nodes N), --layout NxG or --schedule FILE.json" verify
expect_error "not a schedule file: expected topocoll's schedule JSON" verify --schedule "$src/README.md"
expect_error "the topology has no GPU" verify --topology "$data/handwritten-grace-no-gpu.xml"
expect_error "takes exactly one algorithm" schedule export --topology dgx-h100 --algorithm ring,dbt

# --- sim ---------------------------------------------------------------------------------
if expect_ok sim --topology dgx-h100 --nodes 2 --algorithm ring,dbt -b 1K -e 1M -f 32; then
  contains "# ring:" "sim table"
  contains "nccl-model choice" "sim table"
fi
if expect_ok sim --topology dgx-h100 --nodes 2 --algorithm ring -b 1M -e 1M --format jsonl -O "$tmp/r.jsonl"; then
  if [ "$(wc -l <"$tmp/r.jsonl")" -eq 2 ] && grep -q '"schema":"topocoll.record/1"' "$tmp/r.jsonl" && grep -q '"engine":"nccl-model"' "$tmp/r.jsonl"; then ok; else
    fail "sim jsonl: expected one ring record and one nccl-model record: $(cat "$tmp/r.jsonl")"; fi
fi
if expect_ok sim --topology pcie-8gpu --algorithm dbt -b 64K -e 64K --trace "$tmp/t.json"; then
  if python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert any(e['ph']=='X' for e in j['traceEvents'])" "$tmp/t.json"; then ok; else
    fail "sim --trace did not write a Chrome trace"; fi
fi
# Progress on stderr: none for a quick sweep; lines once it has run TOPOCOLL_PROGRESS_AFTER s
# (here 0), ending at 100 %; none with --quiet.
if expect_ok sim --topology pcie-8gpu -b 1K -e 1M; then
  if [ ! -s "$tmp/err" ]; then ok; else fail "a quick sim wrote to stderr: $(head -c 300 "$tmp/err")"; fi
fi
if TOPOCOLL_PROGRESS_AFTER=0 expect_ok sim --topology pcie-8gpu -b 1K -e 1M; then
  if grep -q "^sim: 33/33 points (100%)" "$tmp/err"; then ok; else fail "sim progress: $(cat "$tmp/err")"; fi
fi
# One long point (8192 GPUs) keeps the lines coming while it runs (here every 0.2 s), naming it.
if TOPOCOLL_PROGRESS_AFTER=0 TOPOCOLL_PROGRESS_EVERY=0.2 expect_ok sim --topology dgx-h100 --nodes 1024 \
  --algorithm ring -b 64M -e 64M --channels 16 --protocol Simple --no-nccl-model --jobs 2; then
  if grep -q "^sim: 0/1 points (0%), .*; running: ring at 67108864 B$" "$tmp/err" && grep -q "^sim: 1/1 points (100%)" "$tmp/err"; then
    ok
  else fail "sim progress during a long point: $(cat "$tmp/err")"; fi
fi
if TOPOCOLL_PROGRESS_AFTER=0 expect_ok sim --topology pcie-8gpu -b 1K -e 1M --quiet; then
  if [ ! -s "$tmp/err" ]; then ok; else fail "sim --quiet wrote progress: $(head -c 300 "$tmp/err")"; fi
fi
expect_error "unknown engine 'ns3': expected simgrid or analytic" sim --topology dgx-h100 --engine ns3
expect_error "-b 1Q: unknown suffix 'Q'" sim --topology dgx-h100 -b 1Q
expect_error "--protocol XX: expected auto, LL, LL128 or Simple" sim --topology dgx-h100 --protocol XX
expect_error "-b 1G is larger than -e 1M" sim --topology dgx-h100 -b 1G -e 1M
expect_error "-f 1: expected a number > 1" sim --topology dgx-h100 -f 1
expect_error "unknown algorithm 'tree'" sim --topology dgx-h100 --algorithm tree
expect_error "--format xml: expected table, csv, jsonl or nccl-tests" sim --topology dgx-h100 --format xml
printf '{"links": {"nvlink": {"efficiency": 2}}}' >"$tmp/calib.json"
expect_error "calib.json: 'links.nvlink.efficiency' = 2 is outside [1e-06, 1]" sim --topology dgx-h100 --calibration "$tmp/calib.json"
printf '{"links": ' >"$tmp/broken-calib.json"
expect_error "broken-calib.json:1: not valid JSON" sim --topology dgx-h100 --calibration "$tmp/broken-calib.json"
expect_error "the topology has no GPU" sim --topology "$data/handwritten-grace-no-gpu.xml"
# The stock-NCCL model's release and environment (flags; the process environment as NCCL reads it).
if expect_ok sim --topology dgx-h100 --algorithm ring -b 1G -e 1G; then
  contains "NVLS/Simple" "sim 2.28.9 on one DGX H100: NVLS"; fi
if expect_ok sim --topology dgx-h100 --algorithm ring -b 1G -e 1G --nccl-env NCCL_NVLS_ENABLE=0 --nccl-env NCCL_PROTO=^LL128; then
  contains "Ring/Simple" "sim --nccl-env NCCL_NVLS_ENABLE=0"; fi
if expect_ok sim --topology dgx-h100 --algorithm ring -b 1G -e 1G --nccl-version 2.22.3 --format jsonl -O "$tmp/v.jsonl"; then
  grep -q '"nccl_version":"2.22.3"' "$tmp/v.jsonl" && grep -q '"nccl_channels":24' "$tmp/v.jsonl" ||
    fail "sim --nccl-version 2.22.3: expected nccl_version 2.22.3 and nccl_channels 24: $(cat "$tmp/v.jsonl")"; fi
if NCCL_ALGO=Tree expect_ok sim --topology dgx-h100 --nodes 4 --algorithm ring -b 1G -e 1G; then
  contains " Tree/" "sim with NCCL_ALGO=Tree in the environment (not NVLSTree/)"; fi
expect_error "--nccl-version 2.27: expected 2.22.3 or 2.28.9" sim --topology dgx-h100 --nccl-version 2.27
expect_error "--nccl-env FOO: expected KEY=VALUE" sim --topology dgx-h100 --nccl-env FOO
expect_error "NCCL_ALGO 'Foo': unknown name 'Foo': expected Tree, Ring" sim --topology dgx-h100 --nccl-env NCCL_ALGO=Foo
expect_error "NCCL_MAX_NCHANNELS=x: expected an integer" sim --topology dgx-h100 --nccl-env NCCL_MAX_NCHANNELS=x

# Every collective: nccl-tests' binary and busbw factor in the header, the collective's
# algorithms, nccl-model rows (alltoall: none, said); in records the collective and its size.
for c in "allgather all_gather_perf (p-1)/p = algbw * 0.9375" "reduce_scatter reduce_scatter_perf (p-1)/p = algbw * 0.9375" \
  "broadcast broadcast_perf 1 = algbw * 1.0000" "reduce reduce_perf 1 = algbw * 1.0000"; do
  read -r coll binary factor <<<"$c"
  if expect_ok sim --topology dgx-h100 --nodes 2 --collective "$coll" -b 1K -e 64M -f 256; then
    contains "# busbw = algbw * $factor (nccl-tests' $binary factor)" "sim --collective $coll"
    contains "# collective $coll" "sim --collective $coll"
    contains "# $coll-" "sim --collective $coll: its algorithms"
    contains " Ring/" "sim --collective $coll: nccl-model choice"
  fi
done
if expect_ok sim --topology dgx-h100 --nodes 2 --collective allgather -b 1M -e 1M --format jsonl; then
  check '[ "$(grep -c "\"collective\":\"allgather\"" "$tmp/out")" -eq 2 ] && grep -q "\"engine\":\"nccl-model\"" "$tmp/out"' \
    "sim --collective allgather jsonl: a simulated and a nccl-model allgather record"
  check 'grep -q "\"count\":16384," "$tmp/out"' "sim --collective allgather: count 1M / 4 / 16 ranks"
fi
if expect_ok sim --topology dgx-h100 --collective broadcast --root 7 --algorithm broadcast-tree -b 1M -e 1M; then
  contains "# collective broadcast (root 7)" "sim --collective broadcast --root 7"; fi
expect_error "--collective allgathr: unknown collective 'allgathr': expected one of allreduce" sim --topology dgx-h100 --collective allgathr
expect_error "--algorithm ring: ring is an algorithm for allreduce, not allgather; the allgather algorithms are allgather-ring" \
  sim --topology dgx-h100 --collective allgather --algorithm ring
expect_error "--root 8: expected a rank of 0..7" sim --topology dgx-h100 --collective broadcast --root 8
if expect_ok sim --topology dgx-h100 --collective reduce_scatter -b 8 -e 64 -f 2 --no-nccl-model; then
  contains "# sizes 8, 16 B skipped: fewer than 8 elements, none per rank" "sim reduce_scatter below p elements"
  check 'grep -qE "^ +32 +1 +float" "$tmp/out"' "sim reduce_scatter -b 32: size 32, count 1: $(cat "$tmp/out")"
fi
expect_error "-e 16: allgather over 8 ranks needs at least 32 bytes of float" sim --topology dgx-h100 --collective allgather -b 8 -e 16
expect_error "NCCL 2.22.3 is modelled for allreduce only" sim --topology dgx-h100 --collective reduce --nccl-version 2.22.3
if "$bin" algorithms | awk '$2 == "alltoall"' | grep -q .; then
  if expect_ok sim --topology dgx-h100 --collective alltoall -b 1M -e 1M; then
    contains "# nccl-model: none: NCCL's tuner has no model for alltoall" "sim --collective alltoall"
    check '! grep -q "nccl-model choice" "$tmp/out"' "sim --collective alltoall: no nccl-model column"
  fi
fi
if expect_ok verify --topology dgx-a100 --nodes 2 --collective broadcast --root 5; then
  check '[ "$(grep -c " OK$" "$tmp/out")" -ge 2 ] && ! grep -q "^ring " "$tmp/out"' "verify --collective broadcast: broadcast algorithms only"
fi
expect_error "--algorithm dbt: dbt is an algorithm for allreduce, not reduce" verify --topology dgx-a100 --collective reduce -a dbt
expect_error "--collective gather: unknown collective 'gather'" verify --topology dgx-a100 --collective gather

# sim says on stderr, one line each, what the topology assumed (stdout, which the goldens compare,
# is unchanged): AWS p5's file leaves NVLink unknown, an nvidia-smi matrix leaves the NIC speed.
errcontains() { if grep -qF -- "$1" "$tmp/err"; then ok; else fail "stderr of '$2' lacks '$1': $(head -c 300 "$tmp/err")"; fi; }
if expect_ok sim --topology "$data/aws-p5-h100-no-nvlink.xml" --algorithm ring -b 1M -e 1M --no-nccl-model; then
  errcontains "note: $data/aws-p5-h100-no-nvlink.xml: NVLink unknown: 8 GPUs and no <nvlink> element" "sim p5"
  errcontains "overrides.nvlink" "sim p5"
  check '! grep -q "^note:" "$tmp/out"' "sim p5: notes stay off stdout"
  check '[ "$(grep -vc "^note: " "$tmp/err")" -eq 0 ]' "sim p5: every stderr line is a note"
fi
if expect_ok sim --topology "$data/handwritten-smi-h100x8-nv18.txt" --algorithm ring -b 1M -e 1M --no-nccl-model; then
  contains "x 1 node (8 GPUs)" "sim on an nvidia-smi matrix"
  errcontains "nic_gbps" "sim smi"; fi
printf '\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\nGPU1\tNV4\n' >"$tmp/ragged.txt"
expect_error "ragged.txt:3: row GPU1 with 1 cells: expected 2 cells" topo show --topology "$tmp/ragged.txt"

# --- every preset: topo show and sim run, and say nothing is assumed silently ----------------
for preset in $("$bin" topo presets | awk '$1 != "local" {print $1}'); do
  expect_ok topo show --topology "$preset" && contains "GPU" "topo show $preset"
  expect_ok sim --topology "$preset" -b 1M -e 1M --no-nccl-model && contains "fastest" "sim $preset"
done

# --- 8 x H200 at 8 GiB: NVLS ahead of ring by its traffic, in both engines ------------------
# Per GPU and direction NVLS moves S(1 + 1/N), ring 2S(N-1)/N: with NVLink the bound, ring / nvls
# tends to 2(N-1)/(N+1) = 1.556 on 8 GPUs (docs/simulator.md, "Switch operations").
for engine in analytic simgrid; do
  if expect_ok sim --topology hgx-h200 --algorithm ring,nvls -b 8G -e 8G --engine "$engine" --no-nccl-model --format jsonl; then
    ratio=$(python3 -c 'import json,sys
t={json.loads(l)["algorithm"]: json.loads(l)["time_us"] for l in open(sys.argv[1])}
print("%.3f" % (t["ring"] / t["nvls"]))' "$tmp/out")
    check "python3 -c 'import sys; sys.exit(0 if abs($ratio / 1.5556 - 1) < 0.03 else 1)'" \
      "hgx-h200 8 GiB ($engine): ring / nvls = $ratio, expected 1.556 within 3 % (2(N-1)/(N+1))"
  fi
done

# --- --jobs: points run ahead on several threads, the output as with one -----------------
# Every algorithm of the registry (one not supported here prints its line), each format but
# jsonl (its records carry the date), and an error mid-sweep.
for fmt in table csv nccl-tests; do
  "$bin" sim --topology dgx-a100 --nodes 2 --algorithm all -b 1K -e 64M -f 8 --format "$fmt" -j 1 >"$tmp/j1" 2>/dev/null
  rc1=$?
  "$bin" sim --topology dgx-a100 --nodes 2 --algorithm all -b 1K -e 64M -f 8 --format "$fmt" -j 3 >"$tmp/j3" 2>/dev/null
  rc3=$?
  check '[ $rc1 -eq 0 ] && [ $rc3 -eq 0 ] && [ -s "$tmp/j1" ] && cmp -s "$tmp/j1" "$tmp/j3"' \
    "sim --format $fmt: -j 1 (exit $rc1) and -j 3 (exit $rc3) differ: $(diff "$tmp/j1" "$tmp/j3" | head -5)"
done
expect_error "--jobs -1: expected 0 (the machine's threads) or more" sim --topology dgx-h100 -b 1M -e 1M -j -1
expect_error "nvls is not supported on dgx-a100" sim --topology dgx-a100 --nodes 2 --algorithm ring,nvls -b 1K -e 1M -j 2

summary cli
