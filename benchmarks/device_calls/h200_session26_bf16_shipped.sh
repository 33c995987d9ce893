#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 4: the shipped bf16 choice (GLUON_BF16_TOKENS: Qwen3-30B-sized
# experts on the Gluon GEMMs at 2 tokens on the pairs path and 3-7 on the grouped path, which "auto" now takes in
# place of the chain; tiles of GLUON_BF16_TILES_AT) against the previous one ("auto, tl GEMMs": GLUON_BF16_GEMMS
# never) and vLLM's GEMMs alone; Mixtral-sized experts unchanged (not listed). GPU tests of the Gluon layer first
# (FP8 and bf16). Prediction, written before the call: Qwen3-bf16 2-7 2-8% faster than the previous choice as in
# call 3, 1 and 8-16 level, Mixtral level. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g26d; rm -rf $R; mkdir -p $R
timeout 330 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 1,2,3,4,5,6,7,8,16 \
    --gluon-tiles "" --out $R/q > $R/q.log 2>&1
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases mixtral-bf16 --ms 1,4 \
    --gluon-tiles "" --out $R/m > $R/m.log 2>&1
tar czf $OUT/g26d.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/m.log | head -30
for f in q m; do grep -h "^|" $R/$f.log; done
