#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 6: call 5's one proposal (Qwen3-30B-FP8 M = 1 on the pairs
# path with gate_up 32 x 7 and down 128 x 6, 18.45 against 18.97 us in three rounds) shipped, against call 4's
# tables ("previous tables"), its neighbours and vLLM's two GEMMs alone; GPU tests of the shipped tiles (M = 1
# takes them) and the layer at 1 and 2 tokens. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/o21; rm -rf $R; mkdir -p $R
timeout 100 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shipped-tiles and pairs" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
PREV_AT="{'small': {'pairs': {2: ((32, 6), (128, 6)), 4: ((64, 3), (128, 3)), 5: ((64, 3), (128, 4))}}}"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2 \
    --gluon-tiles "[previous tables]auto:default+GLUON_TILES_AT=$PREV_AT,pairs:32x7/128x3,pairs:32x6/128x6,pairs:32x7/128x5" \
    --out $R/q > $R/q.log 2>&1
tar czf $OUT/o21.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'
