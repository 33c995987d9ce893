#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), second device call: Nsight Compute on the decode GEMMs at
# one and four tokens (where M = 1 stalls: the first session's ncu saw 60% DRAM at M = 1 against
# 82% at M = 4), then the tile sweep at M = 2, 4, 8 with gate_up tiles up to 256 rows (a 256-row
# tile quantizes whole 128-column groups from registers: no counter, no re-read).
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/tiles; rm -rf $R; mkdir -p $R
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for case in deepseek-v3-tp2-fp8-block qwen3-30b-fp8-block; do
  timeout 100 $NCU --clock-control none --profile-from-start off -k regex:moe_decode \
      --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
      --section MemoryWorkloadAnalysis --print-details all \
      python3 benchmarks/probe_decode_ncu.py --case $case --ms 1,4 > $R/ncu_$case.txt 2>&1
done
timeout 330 python3 benchmarks/tune_moe_decode.py $V --skip-variants --precompile 12 --time-budget 240 \
    --tile-cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block --tile-ms 2,4,8 \
    --gate-up-candidates 32,64,128,256:4,6:2,4 --down-candidates 64,128:3,4:4 --out $R > $R/tune.log 2>&1
cp $R/* $OUT/ 2>/dev/null
for f in $R/ncu_*.txt; do
  echo "== $f"
  grep -E "moe_decode_[a-z_]+kernel|DRAM Throughput|Achieved Occupancy|Stall|stalled|Duration|Registers Per|Waves Per SM|Block Limit" $f \
      | sed 's/  */ /g' | head -60
done
grep -E "^(# |\|)" $R/tune.log | grep -v precompile | cut -c1-400 | tail -20
