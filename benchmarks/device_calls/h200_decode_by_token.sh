#!/usr/bin/env bash
# Issue #16, first call of the next session (written 2026-11-30, not run yet): GPU maths of the
# kernels added untimed (the down GEMM by token, FP8 block and bf16; gate_up writing whole groups
# from registers), the variants side by side (the down GEMM by token with 64/32/16-row tiles against
# the shipped layer), and the epilogue probe (each GEMM alone with its group quantization or top-k
# reduce off, vLLM's GEMMs alone).
# Device, repo root, carry .vendor.
# The record of the 2026-12-01 call (commit 1faec37): the down GEMM by token is gone since (branch downbytoken).
source benchmarks/h200_setup.sh
R=/tmp/bytoken; rm -rf $R; mkdir -p $R
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "down_by_token or intermediate_quantized or pairs_path_equals or fp8 or cuda_graph" > $R/pytest_decode.txt 2>&1
timeout 270 python3 benchmarks/tune_moe_decode.py $V --skip-tiles --ms ${MS:-1,2,4,8} \
    --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 --out $R > $R/tune.log 2>&1
timeout 170 python3 benchmarks/probe_decode_epilogues.py $V --ms ${MS:-1,2,4,8} --out $R > $R/probe.log 2>&1
cp $R/* $OUT/ 2>/dev/null
echo "pytest: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
tail -n 3 $R/tune.log $R/probe.log | grep -i error
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-1100
grep "^|" $R/probe.log
