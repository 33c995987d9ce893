#!/usr/bin/env bash
# Issue #16, seventeenth session (2026-12-03), call 4: the shipped tree (GLUON_FP8_GEMMS "measured": Gluon GEMMs on
# the pairs path at 1-2 tokens, the grouped path at 8 for small experts; down's first weights before its wait):
# GPU tests of the decode kernels, then the whole layer beside tl's GEMMs everywhere, Gluon on either path at every
# M, and vLLM's GEMMs alone. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g4; rm -rf $R; mkdir -p $R/p
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py tests/kernels/test_moe_decode_gluon.py \
    > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 250 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,3,4,6,8 --gluon-tiles pairs:default,grouped:default --out $R/p > $R/p.log 2>&1
tar czf $OUT/g4.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
