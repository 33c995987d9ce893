#!/usr/bin/env bash
# Issue #16, twentieth session (2026-12-03), call 5: GLUON_TILES_AT shipped (down's stages from calls 2-3, gate_up's
# tiles from call 4: DeepSeek-V3-TP2 pairs 32x8 at 1 token, 64x4 at 2; Qwen3-30B-FP8 grouped 32x4 at 8) against
# GLUON_TILES alone, GPU tests of the shipped and 8-stage tiles first; beside them a few neighbours. Prediction:
# DeepSeek M = 1 about 1.7 us faster, M = 2 about 0.8, Qwen3 M = 8 about 1, M = 2 / 5 / 12 as call 3.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/tc; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shipped-tiles or 8-stages" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2 \
    --gluon-tiles "auto:default+GLUON_TILES_AT={},pairs:32x8/128x4,pairs:64x6/128x3" --out $R/d > $R/d.log 2>&1
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,5 \
    --gluon-tiles "auto:default+GLUON_TILES_AT={}" --out $R/p > $R/p.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 7,8,9,12 \
    --gluon-tiles "auto:default+GLUON_TILES_AT={},grouped:32x4/64x3,grouped:32x4/64x4" --out $R/g > $R/g.log 2>&1
tar czf $OUT/tc.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/d.log $R/p.log $R/g.log | head -30
for f in d p g; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'; done
