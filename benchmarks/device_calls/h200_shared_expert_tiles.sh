#!/usr/bin/env bash
# Issue #16, written in the twenty-first session (2026-12-03), run as the twenty-second session's call 1 (refuted:
# slower at every point; the switch it sets was removed in d438307; benchmarks/results/moe_layer.md). The pairs
# path's Gluon GEMMs on shared-expert tiles (GLUON_PAIRS_SHARE_EXPERTS: the pairs of a block of 8 tokens routed
# to one expert share a tile, the lowest pair's program computing it), so that the grouped path's weight reads
# come without its route launch's alignment (3.7 us alone at Qwen3-30B-FP8 M = 8, the pairs path's x launch
# 1.4). GPU tests first (maths against the fp32 reference and tl's kernel over graph replays), then the layer
# beside the shipped choice with the grouped path's tiles and the pairs path's. Prediction: 1-2 us faster than
# the shipped grouped path at Qwen3 6-8 and DeepSeek 3-8 (the alignment gone, each GEMM program one more
# dependent load before its first weights); past 8 tokens 16-token tiles (GLUON_SHARED_BLOCK_M) against two
# blocks of 8 (an expert read once a block). About 4 minutes. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/se; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shared-experts" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
S="+GLUON_PAIRS_SHARE_EXPERTS=True"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 3,6,7,8,12,16 \
    --gluon-tiles "pairs:32x4/64x3$S,pairs:32x6/64x3$S,pairs:32x6/128x3$S,pairs:32x4/64x3$S+GLUON_SHARED_BLOCK_M=8" \
    --out $R/q > $R/q.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 3,6,8 \
    --gluon-tiles "pairs:32x8/64x3$S,pairs:32x8/128x3$S" --out $R/d > $R/d.log 2>&1
tar czf $OUT/se.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
