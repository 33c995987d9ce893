#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 3: the Gluon down GEMM's top-k sum in a launch of its own
# (moe_decode.GLUON_DOWN_SUM_LAUNCH: down writes its fp32 pair rows with no arrival counter and lets moe_gemm's
# top-k reduce start, PDL-linked, as on the chain path). Seen in the twenty-second session and again in call 1:
# at Qwen3-30B-FP8 M = 12 / 16 the grouped path's Gluon down (its sum fused: the last program of each column tile
# sums the tile's top-k rows) takes 31.4 / 37.8 us alone against the chain's tl down 28.6 / 34.4 plus its reduce
# launch 1.2. Prediction, written before the call: if the fused sum's tail is that difference, Gluon down alone
# drops by 2-3 us at Qwen3 12-16 (about 1 at 8) and the layer gains 1-2 us there (0.5-1 at 8: Qwen3 M = 8 then
# level with or ahead of vLLM's GEMMs alone, 16 still behind); if the tiles are the difference, down alone is
# level and the layer loses the reduce launch (about 1 us). GPU tests first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25c; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "down-sum-launch or shipped-tiles" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[sum launch]auto:default+GLUON_DOWN_SUM_LAUNCH=True"
timeout 240 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 4,7,8,12,16,20 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 2,3,8,12 \
    --gluon-tiles "$E" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g25c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
