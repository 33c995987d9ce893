#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 1, whichever GPU comes. Device, repo root, carry=[".vendor"].
# On an H200 (none lent since the twenty-seventh session): any_gpu_session34.sh's goal table (Qwen3-30B-FP8 1-64,
# DeepSeek-V3-TP2 1-8, the bf16 floor at one token, inverse RoPE).
# On an H100: the first H100 timelines of the Gluon GEMMs (probe_decode_timeline.py, device-side stamps), at the
# points where DeepSeek-V3-TP2 trails vLLM's GEMMs alone (pairs 2; grouped 6 and 8, where the layer took 2.9-3.7 us
# more than its launches alone in the thirty-fourth session), at 8 also with the previous intermediate form
# (GLUON_INTER_QUANTIZED_BY_DOWN=False, 0.2-1.6 us faster there in three calls), and Qwen3-30B-FP8 pairs 1.
# Prediction, written before the call: at DeepSeek 8 down's wait returns within 0.5 us of gate_up's last end and
# the 3 us are gate_up's tail (its last K loops ending 5-10 us after its median ones, as at DeepSeek 2 on the H200:
# 54.7 / 59.5 / 62.6); with the previous form gate_up's last end later by the epilogue's re-read but down's stream
# after its wait shorter (it reads e4m3 rows, no quantizing).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
if [[ "$GPU" == *H200* ]]; then
    exec bash benchmarks/device_calls/any_gpu_session34.sh
fi
source benchmarks/h200_setup.sh
R=/tmp/g35; rm -rf $R; mkdir -p $R
P="python3 benchmarks/probe_decode_timeline.py"
timeout 120 $P --cases deepseek-v3-tp2-fp8-block --ms 2 --paths pairs --out $R/p > $R/p.log 2>&1
timeout 150 $P --cases deepseek-v3-tp2-fp8-block --ms 6,8 --paths grouped --out $R/g > $R/g.log 2>&1
timeout 120 $P --cases deepseek-v3-tp2-fp8-block --ms 8 --paths grouped --switch GLUON_INTER_QUANTIZED_BY_DOWN=False \
    --out $R/v > $R/v.log 2>&1
timeout 100 $P --cases qwen3-30b-fp8-block --ms 1 --paths pairs --out $R/q > $R/q.log 2>&1
tar czf $OUT/g35.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
for f in p g v q; do grep -h "^|" $R/$f.log | grep -v "^| case\|^|---"; done
