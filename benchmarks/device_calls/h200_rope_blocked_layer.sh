#!/usr/bin/env bash
# Issue #16, eleventh session (2026-12-02): inverse-RoPE with each program taking a run of adjacent
# tiles (blocked_tiles) against the default strided order, the clamped kernel, vLLM's and the copy;
# then the whole decode layer on the current tree side by side with vLLM's GEMMs alone (the tenth
# session's pairs path with x quantized first was never timed beside them). Device, repo root,
# carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/ropeblocked; rm -rf $R; mkdir -p $R/rope
timeout 200 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
timeout 330 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --ms 1,2,4,8,16,32,64 --time-budget 280 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/ropeblocked.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/rope.log | head -30
grep "^|\|copy" $R/rope.log | tail -7
tail -n 4 $R/bench_moe_layer.log | grep -i -B3 error
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f1-13
