#!/usr/bin/env bash
# Issue #16, twenty-third session (2026-12-03), call 1: the chain path's down GEMM loading its first K steps of
# weights before its PDL wait (CHAIN_DOWN_EARLY_STEPS 2 and 3; gate_up then waits before it lets the launches
# after it start). Prediction, written before the call: 1-3 us a layer faster at the chain's goal points
# (DeepSeek-V3-TP2 16 479.9 -> 477-479, Qwen3-30B-FP8 32 135.5 -> 133-134.5, 64 152.0 -> 149-151), since down's
# first programs are resident during gate_up's last wave and the quantization launch while the HBM idles;
# not enough alone for Qwen3's 4-5 us gaps. GPU tests of the chain first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g23a; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode.py \
    -k "chain" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[early2]auto:default+CHAIN_DOWN_EARLY_STEPS=2,[early3]auto:default+CHAIN_DOWN_EARLY_STEPS=3"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 32,64 --gluon-tiles "$E" \
    --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 16 --gluon-tiles "$E" \
    --out $R/d > $R/d.log 2>&1
tar czf $OUT/g23a.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
