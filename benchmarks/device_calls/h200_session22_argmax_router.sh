#!/usr/bin/env bash
# Issue #16, twenty-second session (2026-12-03), call 6: the few-token router's top-k as TOP_K successive row
# maxima (FEW_ROUTER_TOPK_BY_ARGMAX) in place of tl.topk's bitonic network over its [tokens, experts] tile (call 5:
# 16 warps made the route launch slower and a 16-token tile took 7.0 us against 3.6: the router program's own
# work is most of the launch; its sm_90 PTX shrinks from 207 to 169 KB). GPU tests first (the routing exact against
# the reference, ties included; graph replays). Variants: argmax at the shipped 8 warps, at 4, and with the
# few-token path up to 16 tokens / 2048 logits (an 8-row tile up to 8 tokens). Prediction: route launch 3.6 ->
# 2.5-3.0 us alone at Qwen3-30B-FP8 M = 7-8 (the layer 0.5-1 us faster: M = 8 about 67.5-68 against vLLM's 66.9),
# DeepSeek M = 3 3.1 -> about 2.5; with the path to 16 tokens, routers apart replaced at Qwen3 12-16 and DeepSeek
# 6-8 by one program, level or better. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/am; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard tests/kernels/test_moe_decode.py -k "argmax" \
    > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
A="[argmax]auto:default+FEW_ROUTER_TOPK_BY_ARGMAX=True"
B="[argmax, 4 warps]auto:default+FEW_ROUTER_TOPK_BY_ARGMAX=True+ROUTE_WIDE_TILE_WARPS=4"
C="[argmax, few to 16]auto:default+FEW_ROUTER_TOPK_BY_ARGMAX=True+FEW_TOKENS=16+FEW_ELEMENTS=2048"
timeout 220 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 3,7,8,12,16 \
    --gluon-tiles "$A,$B,$C" --out $R/q > $R/q.log 2>&1
timeout 160 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 3,6,8 \
    --gluon-tiles "$A,$B,$C" --out $R/d > $R/d.log 2>&1
tar czf $OUT/am.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
