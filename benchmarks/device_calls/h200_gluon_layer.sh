#!/usr/bin/env bash
# Issue #16, seventeenth session (2026-12-03), call 1: the grouped path's FP8 block-scaled GEMMs in Gluon
# (moe_decode_gluon, GLUON_FP8_GEMMS): GPU tests (maths against fp32 and tl's kernel, graph replays), then the
# whole layer beside tl's grouped path, the shipped path and vLLM's two GEMMs alone. Device, repo root,
# carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g1; rm -rf $R; mkdir -p $R/p
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 340 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,4,8 --gluon-tiles 64x4/64x4,128x3/64x4,64x4/128x4 --out $R/p > $R/p.log 2>&1
tar czf $OUT/g1.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
