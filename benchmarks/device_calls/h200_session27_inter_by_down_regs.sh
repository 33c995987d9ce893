#!/usr/bin/env bash
# Issue #16, twenty-seventh session (2026-12-04), call 4: the FP8 intermediate quantized by the Gluon down GEMM, A in registers
# (GLUON_INTER_QUANTIZED_BY_DOWN), second form: A loaded from the L2 into registers two steps ahead (no bf16 A ring).
# Call 3's first form (a bf16 A ring of 2-8 slots in shared memory) was faster at Qwen3-30B-FP8 M = 1 (17.5 against
# 17.9 us) and 32 (131.4 / 133.1) but slower at 2-8 and DeepSeek-V3-TP2 1-2 (M = 2 28.4 / 25.3): down's larger
# shared memory (116 against 104 KB at M = 1) kept it from starting beside gate_up's programs (the timeline's
# down starts at M = 2 reached 21.8 us). This form's down takes less shared memory than the shipped one.
# Prediction, written before the call: Qwen3-FP8 M = 1 and 32 as call 3 (17.5, 131.4), 2-8 level with the shipped
# layer or faster, 16 and 64 level or 0.3% faster; DeepSeek 1-2 level or faster; bit-equal outputs (GPU test).
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g27d; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py -k "quantized_by_down" -p no:cacheprovider > $R/tests.log 2>&1
tail -3 $R/tests.log
G="[by down]auto:default+GLUON_INTER_QUANTIZED_BY_DOWN=True"
timeout 220 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,8 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
timeout 60 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1,2 --paths pairs \
    --switch GLUON_INTER_QUANTIZED_BY_DOWN=True --out $R/t > $R/t.log 2>&1
tar czf $OUT/g27d.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log $R/t.log | head -30
grep -h "FAILED\|Error" $R/tests.log | head -10
for f in q d t; do grep -h "^|" $R/$f.log; done
