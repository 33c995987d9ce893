#!/usr/bin/env bash
# Issue #16, twenty-seventh session (2026-12-04), call 5: the shipped tree with GLUON_INTER_QUANTIZED_BY_DOWN on
# (call 4's form) against the previous layer (the switch off) in one run, and the decode MoE GPU tests over the
# shipped tree. Prediction, written before the call: call 4's ratios again (Qwen3-30B-FP8 16 level with vLLM's GEMMs
# alone, 64 ahead, 1-8 and 32 ahead; DeepSeek-V3-TP2 1, 2, 8 as call 4). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g27e; rm -rf $R; mkdir -p $R
# (Twenty-eighth session: the bf16 in-the-MMA replay cases left to h200_session28_bf16_in_mma.sh; 257 GPU cases here.
# Twenty-ninth: GPU_TESTS=0 leaves the tests out, for h100_or_h200_session29.sh on an H200.)
if [[ "${GPU_TESTS:-1}" != 0 ]]; then
    timeout 330 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py tests/kernels/test_moe_decode.py \
        -k "not accumulating" -p no:cacheprovider > $R/tests.log 2>&1
    tail -3 $R/tests.log
fi
G="[previous]auto:default+GLUON_INTER_QUANTIZED_BY_DOWN=False"
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 80 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,8 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g27e.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "FAILED\|Error" $R/tests.log 2>/dev/null | head -10
for f in q d; do grep -h "^|" $R/$f.log; done
