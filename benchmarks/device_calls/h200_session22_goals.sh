#!/usr/bin/env bash
# Issue #16, twenty-second session (2026-12-03), call 2: the closing goal table on the shipped tree (the
# shared-expert tiles removed, d438307): the layer against vLLM's two GEMMs alone in the same run at the goal's
# token counts, Qwen3-30B-FP8 at all seven, DeepSeek-V3-TP2 at 1-8 (16-64 in call 3); the Gluon GPU tests of the
# shipped tiles first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g22; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shipped-tiles" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
timeout 240 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 --gluon-tiles "" \
    --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,8 --gluon-tiles "" \
    --out $R/d > $R/d.log 2>&1
tar czf $OUT/g22.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
