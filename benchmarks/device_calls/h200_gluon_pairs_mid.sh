#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 6: Qwen3-30B-FP8 M = 4-8 (the tl pairs path at 4-6, 2-4%
# behind vLLM's GEMMs at 5-6; grouped on Gluon at 8, 3.3% behind) on the Gluon pairs path (no per-pair handoff)
# and, at 4-6, the grouped path on Gluon, each launch alone too. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/gp; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 4,5,6,7,8 \
    --gluon-tiles pairs:default,grouped:default --out $R/q > $R/q.log 2>&1
tar czf $OUT/gp.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log | cut -c1-600
