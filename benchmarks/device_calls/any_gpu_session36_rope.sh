#!/usr/bin/env bash
# Issue #16, thirty-sixth session (2026-12-06): inverse RoPE with fewer instructions a row. Device, repo root,
# carry=[".vendor"]. The knob sweep (bench_inv_rope_fp8.py --knobs-only: default, pow2_inverse_bits,
# rope_masked_load, both; vLLM's kernel and a torch copy of the same bytes beside them, two rounds, each variant's
# bytes checked against the default's), then the kernel's GPU tests.
# Prediction (written before the call): the tile loop has 255 sm_90 instructions a row by default, 226 with both
# knobs (-11%); the ninth session's no-clamp change (16 fewer) gave 1.0-2.5% at T >= 256, so both knobs 1.5-4% at
# T >= 4096 (T = 4096 from ~29.5 us to 28.4-29.0 on an H200, 84-86% of copy: still short of 88%), level below 256.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/r36; rm -rf $R; mkdir -p $R
timeout 400 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R > $R/knobs.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_inv_rope_fp8.py > $R/tests.log 2>&1
tar czf $OUT/r36.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/knobs.log | head -30
tail -3 $R/tests.log
sed -n '/knob sweep/,$p' $R/knobs.log | head -40
