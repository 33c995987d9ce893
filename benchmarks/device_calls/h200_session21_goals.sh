#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 4: call 3's tuner proposals (the grouped path on Gluon in
# place of the chain at Qwen3-30B-FP8 17-20 and DeepSeek-V3-TP2 10, 12, 13) as shipped, against call 2's tables
# ("previous tables") and vLLM's two GEMMs alone, at the changed token counts and the goal's 16, 32, 64; GPU tests
# of the new tiles first. Prediction: 0.5-2% faster at the changed counts, level elsewhere.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g21; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shipped-tiles" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
PREV_AT="{'small': {'pairs': {2: ((32, 6), (128, 6)), 4: ((64, 3), (128, 3)), 5: ((64, 3), (128, 4))}, 'grouped': {3: ((32, 6), (128, 4)), 7: ((32, 4), (64, 3)), 8: ((32, 4), (64, 3)), 9: ((32, 4), (64, 3)), 10: ((32, 6), (64, 4)), 11: ((32, 8), (64, 4)), 12: ((32, 6), (64, 4))}}, 'large': {'pairs': {1: ((32, 8), (128, 3)), 2: ((64, 4), (128, 3))}, 'grouped': {3: ((32, 8), (64, 3)), 5: ((32, 8), (64, 3)), 6: ((32, 8), (64, 3)), 8: ((32, 8), (64, 3))}}}"
PREV_TOKENS="{'small': {'pairs': (1, 2, 4, 5), 'grouped': (3, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)}, 'large': {'pairs': (1, 2), 'grouped': (3, 5, 6, 8)}}"
PREV="[previous tables]auto:default+GLUON_TILES_AT=$PREV_AT+GLUON_FP8_TOKENS=$PREV_TOKENS"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 16,17,18,20,32,64 \
    --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 10,12,13,32,64 \
    --gluon-tiles "$PREV" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g21.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'; done
