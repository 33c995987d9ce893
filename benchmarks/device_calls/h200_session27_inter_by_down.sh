#!/usr/bin/env bash
# Issue #16, twenty-seventh session (2026-12-04), call 3: the FP8 intermediate quantized by the Gluon down GEMM
# (GLUON_INTER_QUANTIZED_BY_DOWN): gate_up writes bf16 only (no group counter, no last writer's re-read) and down
# quantizes each K step's bf16 tile in shared memory. Call 1's timeline: gate_up's last program ends 1.6 us
# (Qwen3-30B-FP8 M = 1) and 3.0 us (M = 2) after the last K loop (the last writers' acq_rel atomic and re-read under
# a loaded memory system), and down waits for that last end. (Call 2, scales in rings, was slower: removed.)
# Prediction, written before the call: Qwen3-FP8 M = 1 0.5-1 us faster per layer, M = 2 1-2 us, 4-8 0-1 us, 16-64
# level within 1%; DeepSeek-V3-TP2 M = 1-2 0.5-1.5 us faster; outputs bit-equal to the shipped layer (GPU test).
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g27c; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py -k "quantized_by_down" -p no:cacheprovider > $R/tests.log 2>&1
tail -3 $R/tests.log
G="[by down]auto:default+GLUON_INTER_QUANTIZED_BY_DOWN=True"
timeout 220 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,8 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
timeout 60 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1,2 --paths pairs \
    --switch GLUON_INTER_QUANTIZED_BY_DOWN=True --out $R/t > $R/t.log 2>&1
tar czf $OUT/g27c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log $R/t.log | head -30
grep -h "FAILED\|Error" $R/tests.log | head -10
for f in q d t; do grep -h "^|" $R/$f.log; done
