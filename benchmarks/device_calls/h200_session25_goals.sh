#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 5: the shipped tree after calls 3-4 (GLUON_DOWN_SUM_LAUNCH on;
# Qwen3-30B-like FP8 on the grouped path's Gluon GEMMs at 3 and 7-64 tokens, down 128 x 4 at 21-40): the goal table
# side by side with vLLM's two GEMMs alone, the previous choice beside it ("fused sum": the Gluon down summing its
# top-k rows itself, the shipped choice up to 20 tokens before this session; "auto, tl GEMMs": the chain past 20,
# the shipped choice there before), and the GPU tests of both decode files. Prediction, from calls 3-4: Qwen3 1-5
# and DeepSeek 1, 4-6, 10, 13 level with or faster than before (the pairs and grouped points call 3 did not time),
# Qwen3 8-64 and DeepSeek 2-3, 8, 12 0.8-3.5 us faster, DeepSeek 16-64 unchanged (the chain). Device, repo root,
# carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25e; rm -rf $R; mkdir -p $R
timeout 240 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    tests/kernels/test_moe_decode.py > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[fused sum]auto:default+GLUON_DOWN_SUM_LAUNCH=False"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,3,4,5,8,16,24,32,64 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
timeout 260 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block \
    --ms 1,2,3,4,5,6,8,10,13,16,32,64 --gluon-tiles "$E" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g25e.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
