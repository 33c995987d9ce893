#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 9: with the Gluon down's top-k sum launched apart, its pair
# rows in the activation dtype (moe_decode.GLUON_DOWN_ROWS_IN_ACT_DTYPE: bf16, as the chain's) instead of fp32:
# half the bytes down writes and the reduce reads back (4 -> 2 MB at Qwen3-30B-FP8 M = 64, where the reduce took
# 1.9 us alone in call 7). Prediction, written before the call: 0.3-1 us off the layer at Qwen3 32-64 (32 then
# level with or ahead of vLLM's GEMMs alone: it was 0.3% behind), less at 8-16, level at DeepSeek. GPU tests of
# the bf16 rows first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25i; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "bf16-rows" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[bf16 rows]auto:default+GLUON_DOWN_ROWS_IN_ACT_DTYPE=True"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,8,16,32,64 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 2,8,13 \
    --gluon-tiles "$E" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g25i.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log; done
