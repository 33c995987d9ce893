#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 2: call 1's persistent Gluon down GEMM (GLUON_PERSISTENT_DOWN)
# lost at every point (Qwen3-30B-FP8 M = 8 down alone 24.5 -> 32.4 us at 4 programs an SM), with 4 and 8 an SM
# level with each other. That build recomputed each step's copy and scale pointers from the item's routing
# (expert id and sorted pairs read every step, to keep Triton 3.6 off an `if` it fails to lower), the sixth
# session's reading of its tl persistent down. This build (nested item and K loops) computes each item's pointers
# once, an item ahead; each step only selects between this item's and the next one's. Prediction, written before
# the call: if per-step recomputation was the loss, down alone at 4-8 an SM comes back to the one-item grid's
# 24.5 us or below at Qwen3 M = 8 (37.8 at 16), the layer level or faster; if still 5-30% slower, static
# round-robin items lose to the hardware's scheduling of one-item programs and the persistent form is closed.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25b; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "persistent or shipped-tiles" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[p4]auto:default+GLUON_PERSISTENT_DOWN=4,[p8]auto:default+GLUON_PERSISTENT_DOWN=8"
E="$E,[p16]auto:default+GLUON_PERSISTENT_DOWN=16"
timeout 240 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 8,16 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 2,8 \
    --gluon-tiles "$E" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g25b.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
