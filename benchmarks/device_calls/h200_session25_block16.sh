#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 8: the grouped path's Gluon token tile of 16 rows
# (moe_decode.GLUON_BLOCK_M=16, an existing switch) at Qwen3-30B-FP8 16-64 tokens, where call 7 left the layer
# 1.9% (16) and 2.1% (64) behind vLLM's GEMMs alone. At 64 tokens (512 pairs on 128 experts, about 4 an expert)
# about 2% of experts hold more than 8 pairs and so two 8-row tiles, each reading the expert's weights (gate_up
# 96.4 us alone against the chain's tl gate_up on 16-row tiles 94.0). Prediction, written before the call: 16-row
# tiles take 1-2 us off gate_up and 0.5-1 off down at 64 (the layer 1.5-3 us faster, 150-151.5 against 153); at
# 16-32 level or slower (mostly-empty 16-row tiles copy twice the activation bytes a stage). Every output is
# checked against the fp32 reference by the probe. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25h; rm -rf $R; mkdir -p $R
E="[block 16]auto:default+GLUON_BLOCK_M=16"
timeout 240 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 16,32,48,64 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
tar czf $OUT/g25h.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log
