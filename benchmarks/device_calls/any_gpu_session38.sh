#!/usr/bin/env bash
# Issue #16, thirty-eighth session (2026-12-06): one call for whichever GPU comes. Device, repo root,
# carry=[".vendor"].
# 1. The inverse-RoPE knob sweep (default, previous, no_prefetch, prefetch_max_16, token_run_4; vLLM's kernel now
#    writes into the same per-set buffers as ours, 433ea49). Predictions on an H200 (any_gpu_session37.sh's): default
#    (213 instructions a row) 1.5-4% faster than previous (255) at T >= 4096; no_prefetch faster at T >= 8192 and
#    slower at 4096 as on the H100s; prefetch_max_16 (now its two loops called apart, each compiled as alone) within
#    0.5% of no_prefetch at every T >= 8192 (65536 included, where the inlined build was as slow as default) and
#    within 1% of default at 4096 (its prefetching loop 217 instructions against 213); T = 4096 short of 88% of
#    copy unless token_run_4 gains there. vLLM's kernel slower than before at T <= 1024 (per-set buffers).
# 2. The read-floor probe (any_gpu_session38_read_floor.sh says what it predicts).
# 3. The inverse-RoPE GPU tests.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/s38; rm -rf $R; mkdir -p $R
timeout 150 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --knob-variants default,previous,no_prefetch,prefetch_max_16,token_run_4 \
    --knob-tokens 1,16,256,1024,4096,8192,16384,32768,65536 --out $R > $R/knobs.log 2>&1
tar czf $OUT/s38.tgz -C $R .
timeout 150 python3 benchmarks/probe_decode_read_floor.py --out $R > $R/read_floor.log 2>&1
tar czf $OUT/s38.tgz -C $R .
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_inv_rope_fp8.py > $R/rope_tests.log 2>&1
tar czf $OUT/s38.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
tail -1 $R/rope_tests.log
cat $R/read_floor.md
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -12
