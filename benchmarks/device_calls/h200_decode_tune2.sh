#!/usr/bin/env bash
# Issue #16, second tuning call: GPU tests, the switches at M = 1, 2, 4 side by side, the deeper
# tile sweep at M = 1..8, and Nsight Compute on one M = 1 and M = 4 DeepSeek layer call.
source benchmarks/h200_setup.sh
R=/tmp/tune2; rm -rf $R; mkdir -p $R
timeout 80 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "fp8 or cuda_graph or alignment" > $R/pytest_decode.txt 2>&1
timeout 360 python3 benchmarks/tune_moe_decode.py --vllm-file .vendor/vllm_fused_moe.py \
    --vllm-configs .vendor/configs --ms 1,2,4 --tile-ms 1,2,4,8 --tile-cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --time-budget 200 --out $R > $R/tune.log 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 100 $NCU --clock-control none --profile-from-start off --section SpeedOfLight --section WarpStateStats \
    --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    python3 benchmarks/probe_decode_ncu.py --ms 1,4 > $R/ncu.txt 2>&1
cp $R/* $OUT/ 2>/dev/null
echo "pytest: $(tail -1 $R/pytest_decode.txt)"
grep "^#" $R/tune.log | cut -c1-200 | tail -6
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-400
grep -E "^  moe_|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" $R/ncu.txt | head -60
