#!/usr/bin/env bash
# Issue #16, twentieth session (2026-12-03), call 3: GLUON_DOWN_STAGES shipped (Qwen3-30B-FP8: down 6 stages at 2
# tokens and 4 at 5 on the pairs path, 4 at 12 on the grouped; call 2) against the same without it, GPU tests of
# the shipped tiles first; beside them down's 5 stages on the pairs path and 4 on the grouped at 9-14 tokens.
# Prediction: M = 2 about 1.2 us faster, M = 5 about 2, M = 12 about 1; the other rows level. Device, repo root,
# carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/dc; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shipped-tiles or mixed" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 2,5 \
    --gluon-tiles "auto:default+GLUON_DOWN_STAGES={},pairs:32x6/128x5" --out $R/p > $R/p.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 9,10,11,12,13,14 \
    --gluon-tiles "auto:default+GLUON_DOWN_STAGES={},grouped:32x6/64x4" --out $R/g > $R/g.log 2>&1
tar czf $OUT/dc.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/p.log $R/g.log | head -30
grep -h "^|" $R/p.log $R/g.log | cut -d"|" -f2-6,7-9,10
