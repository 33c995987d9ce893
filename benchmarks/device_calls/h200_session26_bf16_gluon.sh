#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 1: bf16 on the decode layer's Gluon GEMMs
# (moe_decode.GLUON_BF16_GEMMS; the kernel with BLOCK_SCALED off: bf16 wgmma, no scales, 64 columns a stage; on the
# pairs path an x launch that only routes). Why: at Qwen3-30B-bf16 M = 1 the tl pairs path's down took 10.7 us alone
# for 5.6 us of bytes (the FP8 Gluon down 4.9 for 2.8), the layer 24.7 = 1.49x the floor against the goal's 1.35x.
# Prediction, written before the call: the layer at M = 1 22.5-23.5 us (down alone about 8), M = 2 1-2 us faster
# than the tl pairs path; the grouped path on Gluon at 4 and 8 level with the chain or slower. GPU tests of the bf16
# Gluon layer first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g26a; rm -rf $R; mkdir -p $R
timeout 200 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "bf16" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
B="GLUON_BF16_GEMMS='always'"
timeout 170 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 1,2 \
    --gluon-tiles "[bf16]pairs:32x6/128x3+$B,[bf16]pairs:32x7/128x6+$B,[bf16]pairs:64x4/64x6+$B" \
    --out $R/q1 > $R/q1.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 4,8 \
    --gluon-tiles "[bf16]grouped:32x6/64x3+$B,[bf16]grouped:32x4/128x4+$B,[bf16]pairs:32x6/128x3+$B" \
    --out $R/q2 > $R/q2.log 2>&1
timeout 60 python3 benchmarks/probe_decode_gluon_layer.py $V --cases mixtral-bf16 --ms 1 \
    --gluon-tiles "[bf16]pairs:32x6/128x3+$B,[bf16]pairs:64x4/64x6+$B" --out $R/m > $R/m.log 2>&1
tar czf $OUT/g26a.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q1.log $R/q2.log $R/m.log | head -30
for f in q1 q2 m; do grep -h "^|" $R/$f.log; done
