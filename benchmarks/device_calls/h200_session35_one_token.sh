#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 3, H200: Qwen3-30B-FP8 at one token, the goal point level with
# vLLM's GEMMs alone (calls 1-2: 17.95 and 17.9 against 18.0 and 17.9 us). (a) The top-k sum in down's last program
# of each column tile (GLUON_DOWN_SUM_LAUNCH=False: one launch fewer; the twenty-fifth session timed it at 4-20
# tokens only, slower from 7) at Qwen3 1-2 and DeepSeek-V3-TP2 1-2; (b) the tile tuner at Qwen3 1 on the tree of
# today (last tuned there in the twenty-first session, before down quantized the intermediate).
# Prediction: the fused sum 0.3-0.8 us faster at one token, level at two; the tuner finds nothing 0.5% faster.
# Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g35c; rm -rf $R; mkdir -p $R
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2 --gluon-tiles "[sum fused]auto:default+GLUON_DOWN_SUM_LAUNCH=False" --out $R/s > $R/s.log 2>&1
timeout 300 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 1 --minutes 4 \
    --out $R/t > $R/t.log 2>&1
tar czf $OUT/g35c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/s.log | grep -v "^|---" | cut -d'|' -f1-5,7-
tail -12 $R/t.log
