#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 7: the GPU tests of the final tree's bf16 Gluon layer (the
# shipped choice end to end through fused_moe_from_logits at M = 1..9 among them) and of tl's decode layer.
# Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/g26g; rm -rf $R; mkdir -p $R
timeout 420 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    tests/kernels/test_moe_decode.py -k "bf16 or shipped or from_logits" > $R/gpu.log 2>&1
tar czf $OUT/g26g.tgz -C $R .
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
