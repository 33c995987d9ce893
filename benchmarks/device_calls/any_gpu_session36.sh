#!/usr/bin/env bash
# Issue #16, written in the thirty-fifth session (2026-12-06) for the next session's first call, whichever GPU comes.
# Device, repo root, carry=[".vendor"].
# On an H200: the confirmation the thirty-fifth session could not get a machine for: its H200 tables (Qwen3-30B-FP8
# pairs 1, 2, 5, grouped 7, 12; DeepSeek-V3-TP2 grouped 3, 7 on Gluon) beside the previous ones, then the tuner at the
# other Gluon counts (any_gpu_session35_tables.sh's H200 branch). Prediction: every changed point faster by 0.4-1 us
# (Qwen3 1 by about 1 us), DeepSeek 7 by 3-5 us.
# On an H100: the timelines of any_gpu_session35.sh's H100 branch (where DeepSeek-V3-TP2's ~3 us over its launches'
# sum at 6-8 tokens goes), with that script's prediction. DeepSeek 8 now runs on tl's GEMMs on an H100 (its
# timeline reads the tl kernel's stamps; the Gluon column at 8 comes from GLUON_FP8_TOKENS_ON_GPU={} below).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ "$GPU" == *H200* ]]; then
    exec bash benchmarks/device_calls/any_gpu_session35_tables.sh
fi
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/g36; rm -rf $R; mkdir -p $R
P="python3 benchmarks/probe_decode_timeline.py --cases deepseek-v3-tp2-fp8-block"
timeout 120 $P --ms 2 --paths pairs --out $R/p > $R/p.log 2>&1
timeout 150 $P --ms 6,8 --paths grouped --out $R/g > $R/g.log 2>&1
timeout 120 $P --ms 8 --paths grouped --switch "GLUON_FP8_TOKENS_ON_GPU={}" --out $R/v > $R/v.log 2>&1
tar czf $OUT/g36.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
for f in p g v; do grep -h "^|" $R/$f.log | grep -v "^| case\|^|---"; done
