#!/usr/bin/env bash
# Issue #16, eighth session (2026-12-01): the decode down GEMM's weights asked into L2 before its PDL
# wait (moe_decode.L2_PREFETCH_DOWN 0 / 1 / 2), FP8 grouped path and bf16 pairs / grouped paths, against
# vLLM's GEMMs alone; then inverse-RoPE with cache hints (evict-first row loads, streaming fp8 stores).
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/l2pf; rm -rf $R; mkdir -p $R/fp8 $R/bf16 $R/rope
timeout 240 python3 benchmarks/probe_decode_l2_prefetch.py $V --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4,8 --out $R/fp8 > $R/fp8.log 2>&1
timeout 120 python3 benchmarks/probe_decode_l2_prefetch.py $V --cases qwen3-30b-bf16 --paths pairs,grouped --ms 1,2,4 \
    --out $R/bf16 > $R/bf16.log 2>&1
timeout 180 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
tar czf $OUT/l2pf.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/*.log | head -30
grep "^|" $R/fp8/*.md $R/bf16/*.md | cut -d: -f2-
grep "^|\|copy" $R/rope.log | tail -8
