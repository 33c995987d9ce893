#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 7: the closing goal table on the session's shipped tree (the
# top-k sum launched apart on the Gluon GEMMs, Qwen3-30B-like FP8 on the grouped path's Gluon GEMMs to 64 tokens,
# call 6's down 128 x 3 at Qwen3 M = 8), the issue's M = 1, 2, 4, 8, 16, 32, 64 side by side with vLLM's two GEMMs
# alone, and the GPU tests of the shipped tiles and the sum launch. Prediction: call 5's ratios within a machine's
# spread, Qwen3 M = 8 about 1% faster than there. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25g; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shipped-tiles or down-sum-launch" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "" --out $R/q > $R/q.log 2>&1
timeout 260 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g25g.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log; done
