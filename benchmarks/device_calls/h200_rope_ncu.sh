#!/usr/bin/env bash
# Issue #16, ninth session (2026-12-01): Nsight Compute on inverse-RoPE at T = 4096 and 16384 beside a
# torch copy of the same bytes (occupancy, registers, DRAM throughput, warp stalls): where the fixed
# 4 us the kernel keeps over the copy goes.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/ropencu; rm -rf $R; mkdir -p $R
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 $NCU --clock-control none --profile-from-start off \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --print-details all \
    python3 benchmarks/probe_inv_rope_ncu.py --tokens 4096,16384 > $R/ncu.txt 2>&1
cp $R/* $OUT/ 2>/dev/null
grep -E "^  [a-z_]+.*\(|inv_rope|elementwise|copy|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Duration|Waves Per SM|Grid Size|Block Size|Stall|Warp Cycles Per Issued|Eligible Warps|Issued Warp|No Eligible" $R/ncu.txt \
    | sed 's/  */ /g' | head -120
