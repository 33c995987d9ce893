#!/usr/bin/env bash
# Issue #16, twenty-seventh session (2026-12-04), call 2: the Gluon GEMMs' block scales copied into shared-memory
# rings with their tiles (GLUON_SCALES_IN_RING) instead of global loads two steps ahead of their use. Call 1's
# timeline: at Qwen3-30B-FP8 M = 1 down's K loop took 1.8-3.0 us after its wait with five of its six weight steps
# already in shared memory; its per-step scale loads (weight scales cold in HBM) form a chain two short steps
# ahead. Prediction, written before the call: Qwen3-FP8 M = 1-2 0.5-1.5 us faster per layer (down's post-wait K
# loop halved), 8-64 level to 1% faster, DeepSeek-V3-TP2 1-2 level to 1 us faster; every output as close to the
# reference. GPU tests first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g27b; rm -rf $R; mkdir -p $R
timeout 200 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py -k "ring or shipped-tiles" -p no:cacheprovider > $R/tests.log 2>&1
tail -3 $R/tests.log
G="[ring]auto:default+GLUON_SCALES_IN_RING=True"
timeout 220 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,8 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
timeout 60 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1,2 --paths pairs \
    --switch GLUON_SCALES_IN_RING=True --out $R/t > $R/t.log 2>&1
tar czf $OUT/g27b.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log $R/t.log | head -30
grep -h "FAILED\|Error" $R/tests.log | head -10
for f in q d t; do grep -h "^|" $R/$f.log; done
