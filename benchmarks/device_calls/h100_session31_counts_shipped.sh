#!/usr/bin/env bash
# Issue #16, thirty-first session (2026-12-05), call 4, whichever GPU comes: GLUON_TILES_FROM_COUNTS shipped on (call 3:
# faster at all 8 points timed, Qwen3-30B-FP8 8-64 by 1.0-1.45 us). First the decode MoE GPU tests over the shipped
# tree (both modules, as h200_session27_shipped.sh, cut to 250 s); then the shipped layer against the aligned one
# (the switch off) at the grouped Gluon points call 3 did not time: Qwen3-30B-FP8 M = 3, 7, 9, 20, 48 and
# Qwen3-30B-bf16 M = 3, 5, 7 (few-token router before), with launches alone now keeping each launch's inputs.
# Prediction, written before the call: faster or level everywhere (0.2-1.5 us), the route launch alone 1.8-2.0 us.
# Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g31d; rm -rf $R; mkdir -p $R
timeout 250 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py tests/kernels/test_moe_decode.py \
    -k "not accumulating" -p no:cacheprovider -x > $R/tests.log 2>&1
tail -3 $R/tests.log
G="[aligned]auto:default+GLUON_TILES_FROM_COUNTS=False"
timeout 140 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 3,7,9,20,48 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 110 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 3,5,7 \
    --gluon-tiles "$G" --out $R/b > $R/b.log 2>&1
tar czf $OUT/g31d.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/b.log | head -30
grep -h "FAILED\|Error" $R/tests.log | head -10
for f in q b; do grep -h "^|" $R/$f.log; done
