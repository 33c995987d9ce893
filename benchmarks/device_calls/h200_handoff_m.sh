#!/usr/bin/env bash
# Issue #16, twelfth session (2026-12-02), call 4: the per-pair handoff on the pairs path against the
# pairs path and the grouped path at 3-8 tokens, FP8 block scales (call 3: 4% faster at DeepSeek M = 4,
# slower at M <= 2); the handoff's and the L2 prefetch's GPU tests. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/handoff; rm -rf $R; mkdir -p $R/p
timeout 300 python3 benchmarks/probe_decode_pairs_variants.py --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 3,4,5,6,8 --variants "pairs, per-pair handoff;grouped" --out $R/p > $R/p.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "handoff or l2 or pairs" \
    > $R/gpu.log 2>&1
tar czf $OUT/handoff.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -40
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
grep "^|" $R/p.log
