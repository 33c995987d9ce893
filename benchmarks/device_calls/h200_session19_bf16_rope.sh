#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 8: the goals this session did not touch, re-measured on the
# committed tree for the closing statement: Qwen3-30B-like bf16 at M = 1-2 against the byte floor (bench_moe_layer)
# and inverse-RoPE FP8 against copy and vLLM's kernel (bench_inv_rope_fp8, no sweep). Device, repo root,
# carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/br; rm -rf $R; mkdir -p $R/rope
timeout 150 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16 --ms 1,2 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
timeout 100 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --skip-sweep --out $R/rope > $R/bench_inv_rope.log 2>&1
tar czf $OUT/br.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-6,13
tail -14 $R/bench_inv_rope.log | cut -c1-260
