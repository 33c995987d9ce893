#!/usr/bin/env bash
# Issue #16, seventeenth session (2026-12-03), call 2: the Gluon GEMMs with gate and up rows in one wgmma (gate_up
# tiles of 32 output columns possible) and their block scales loaded two K steps ahead, at four gate_up/down tiles
# on the grouped path and three on the pairs path (the x launch routing each token for them)
# (call 1: slower than tl's at 1-4 tokens with 64-column 4-stage tiles, level at 8), whole layer beside tl's grouped
# path, the shipped path and vLLM's GEMMs alone. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g2; rm -rf $R; mkdir -p $R/p
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 400 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,4,8 --gluon-tiles 64x4/64x4,32x6/64x3,32x8/128x3,64x3/128x3,pairs:64x4/64x4,pairs:32x6/64x3,pairs:32x8/128x3 --out $R/p > $R/p.log 2>&1
tar czf $OUT/g2.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
