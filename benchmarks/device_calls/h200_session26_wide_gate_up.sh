#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 6: at Qwen3-30B-FP8 16-64 tokens the Gluon gate_up takes
# 1.3-2.3 us more alone than the chain's tl gate_up (call 5: 65.3 / 64.0 at 16, 96.4 / 94.1 at 64), which does not
# quantize the intermediate; the Gluon gate_up's 32-column tiles quantize each 128-column group by its last
# writer (an arrival counter, the group re-read). 128-column gate_up tiles quantize from registers with neither;
# the tile tuner never offered them (its gate_up candidates stop at 64 columns). Prediction, written before the
# call: level or slower (fewer, larger programs: 2 an SM at 2-3 stages of 32 KB), at best 1 us off gate_up at 64.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g26f; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 16,32,64 \
    --gluon-tiles "grouped:128x2/64x3,grouped:128x3/64x3,grouped:128x3/128x4,grouped:32x6/64x3" \
    --out $R/q > $R/q.log 2>&1
tar czf $OUT/g26f.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log
