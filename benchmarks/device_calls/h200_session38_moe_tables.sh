#!/usr/bin/env bash
# Issue #16, thirty-eighth session (2026-12-06; not run: no machine came all session): the H200-only half of
# any_gpu_session37.sh on its own, for a call after any_gpu_session38.sh on a warm H200: the thirty-fifth session's
# H200 MoE tables beside the previous ones (any_gpu_session35_tables.sh's two probes). Device, repo root,
# carry=[".vendor"]. Prediction (the thirty-seventh session's): every changed point faster by 0.4-1 us (Qwen3-30B-FP8
# at one token by about 1 us), DeepSeek-V3-TP2 at 7 tokens by 3-5 us.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
[[ "$GPU" == *H200* ]] || { echo "not an H200: these tables are the H200's"; exit 0; }
source benchmarks/h200_setup.sh
R=/tmp/m38; rm -rf $R; mkdir -p $R
P="python3 benchmarks/probe_decode_gluon_layer.py $V"
PREV=$(grep -o "PREV=\"\[previous tables\][^\"]*\"" benchmarks/device_calls/any_gpu_session35_tables.sh | head -1 \
    | sed 's/^PREV="//; s/"$//')
timeout 150 $P --cases qwen3-30b-fp8-block --ms 1,2,5,7,12 --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
tar czf $OUT/m38.tgz -C $R .
timeout 120 $P --cases deepseek-v3-tp2-fp8-block --ms 3,7 --gluon-tiles "$PREV" --out $R/d > $R/d.log 2>&1
tar czf $OUT/m38.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | grep -v "^|---\|^| case | M |" | awk -F'|' '{print $2"|"$3"|"$4"|"$6"|"$(NF-2)}'; done
