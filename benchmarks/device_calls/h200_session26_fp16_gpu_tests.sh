#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 9: fp16 takes the bf16 Gluon table too (GLUON_BF16_GEMMS
# covers both: offline its sm_90 PTX is f16 wgmma, k16); its maths on the GPU, the shipped choice end to end
# through fused_moe_from_logits at M = 1..9 for bf16 and fp16. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/g26i; rm -rf $R; mkdir -p $R
timeout 200 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "from_logits" > $R/gpu.log 2>&1
tar czf $OUT/g26i.tgz -C $R .
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error|assert" $R/gpu.log | head -20
