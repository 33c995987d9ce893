#!/usr/bin/env bash
# Issue #16, thirty-fourth session (2026-12-06), call 1, whichever GPU comes. Device, repo root, carry=[".vendor"].
# On an H200 (none lent since the twenty-seventh session): the goal table of h200_or_h100_session33.sh's H200 branch
# (Qwen3-30B-FP8 at 1-64 with 3, DeepSeek-V3-TP2 at 1, 2, 3, 4, 8, the bf16 floor at M = 1, inverse RoPE), with the
# aligned column (counts off) beside the shipped size-class threshold. On an H100: (a) the shipped tree's
# GLUON_FP8_TOKENS_ON_GPU against the H200's token counts, Qwen3-30B-FP8 at 4-7 (prediction: shipped 77.0 at 6 and
# 67.5 at 5, level at 4 and 7); (b) Qwen3-30B bf16 at 4-7, shipped (Gluon) against tl's GEMMs, the second time
# (thirty-third session, call 1: tl faster at 4 by 1.05 us and 7 by 0.75, level at 5, slower at 6); (c) the decode
# MoE GPU tests on this tree (269 passed on 16b4278).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/g34; rm -rf $R; mkdir -p $R/rope
show() { grep -h "^|" "$@" | cut -d'|' -f1-8,12; }
if [[ "$GPU" == *H200* ]]; then
    G="[aligned]auto:default+GLUON_TILES_FROM_COUNTS=False"
    timeout 170 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,3,4,8,16,32,64 \
        --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
    timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,3,4,8 \
        --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
    timeout 110 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16 --ms 1 --out $R/moe_layer.md \
        > $R/bench_moe_layer.log 2>&1
    timeout 100 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py \
        --skip-sweep --out $R/rope > $R/bench_inv_rope.log 2>&1
    tar czf $OUT/g34.tgz -C $R .
    grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
    show $R/q.log $R/d.log
    grep -v "^#" $R/moe_layer.md 2>/dev/null | grep "^|" | cut -d'|' -f1-6,13
    tail -14 $R/bench_inv_rope.log | cut -c1-200
    exit 0
fi
timeout 110 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 4,5,6,7 \
    --gluon-tiles "[H200's counts]auto:default+GLUON_FP8_TOKENS_ON_GPU={}" --out $R/t > $R/t.log 2>&1
timeout 110 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 4,5,6,7 \
    --gluon-tiles "" --out $R/b > $R/b.log 2>&1
timeout 280 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py tests/kernels/test_moe_decode.py \
    -k "not accumulating" -p no:cacheprovider > $R/tests.log 2>&1
tar czf $OUT/g34.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/t.log $R/b.log | head -30
show $R/t.log $R/b.log
grep -h "^FAILED\|^ERROR" $R/tests.log | head -10
tail -1 $R/tests.log
