#!/usr/bin/env bash
# Issue #16, fortieth session (2026-12-07): the two goal measurements of any_gpu_session39.sh alone, for a call with
# under 600 s of device time left. Device, repo root, carry=[".vendor"]. Predictions as there: the read floor at
# Qwen3-FP8 one token 1.35-1.5x with down waiting (two tokens 1.25-1.3x); prefetch_max_16 within 0.5% of
# no_prefetch at T >= 8192 and within 1% of default at 4096.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/s40; rm -rf $R; mkdir -p $R
timeout 140 python3 benchmarks/probe_decode_read_floor.py --out $R > $R/read_floor.log 2>&1
tar czf $OUT/s40.tgz -C $R .
timeout 150 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --knob-variants default,no_prefetch,prefetch_max_16 --knob-tokens 256,1024,4096,8192,16384,65536 --out $R \
    > $R/knobs.log 2>&1
tar czf $OUT/s40.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/read_floor.log $R/knobs.log | head -30
cat $R/read_floor.md
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -12
