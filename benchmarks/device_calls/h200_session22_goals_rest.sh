#!/usr/bin/env bash
# Issue #16, twenty-second session (2026-12-03), call 3: the rest of the closing goal table on the shipped tree:
# DeepSeek-V3-TP2 FP8 at 16, 32, 64 against vLLM's two GEMMs alone; Qwen3-30B-like bf16 at M = 1-2 against the
# byte floor (bench_moe_layer); inverse-RoPE FP8 against copy and vLLM's kernel (bench_inv_rope_fp8, no sweep).
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g22r; rm -rf $R; mkdir -p $R/rope
timeout 220 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 16,32,64 \
    --gluon-tiles "" --out $R/d > $R/d.log 2>&1
timeout 150 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16 --ms 1,2 --out $R/moe_layer.md \
    > $R/bench_moe_layer.log 2>&1
timeout 120 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --skip-sweep \
    --out $R/rope > $R/bench_inv_rope.log 2>&1
tar czf $OUT/g22r.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/d.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'
grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-6,13
tail -14 $R/bench_inv_rope.log | cut -c1-260
