#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), third device call: FP8 block scales loaded one K step
# ahead (moe_gemm.BLOCK_SCALES_AHEAD) against loaded in the step that uses them, side by side:
# GPU maths of the FP8 layers, the decode layer's variants at M = 1..64 (with and without the FP8
# pairs path at M = 2) and our unfused chain both ways, then the fused-MoE GEMM tables both ways.
# Device, repo root, carry .vendor.
# The record of that call (commit 07891b2): --scales-inline and the ahead loads are gone since.
source benchmarks/h200_setup.sh
R=/tmp/ahead; rm -rf $R; mkdir -p $R
timeout 110 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py tests/kernels/test_fused_moe_math.py \
    -k "fp8 or cuda_graph or block" > $R/pytest_fp8.txt 2>&1
timeout 220 python3 benchmarks/tune_moe_decode.py $V --skip-tiles --ms 1,2,4,8,16,64 \
    --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block --out $R > $R/tune.log 2>&1
for mode in ahead inline; do
  flag=""; [ $mode = inline ] && flag="--scales-inline"
  timeout 100 python3 benchmarks/bench_fused_moe.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
      --ms 16,4096 $flag --out $R/fused_moe_$mode.json > $R/fused_moe_$mode.log 2>&1
done
cp $R/* $OUT/ 2>/dev/null
echo "pytest: $(tail -1 $R/pytest_fp8.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_fp8.txt | head
tail -n 3 $R/tune.log $R/fused_moe_*.log | grep -i -B2 error
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-900
for mode in ahead inline; do echo "== fused_moe $mode"; grep -v "^#" $R/fused_moe_$mode.log | grep -E "^\|" | cut -c1-260 | head -20; done
