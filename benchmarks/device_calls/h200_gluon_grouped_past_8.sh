#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 3: past 8 tokens FP8 block scales take the chain (five
# launches: route, gate_up, the intermediate's quantization, down, the top-k reduce); at Qwen3-30B-FP8 M = 16-64
# the chain's GEMMs beat vLLM's by 1-3 us but the three small launches cost about 6 (call 2: layer 2.9-4.4% behind
# vLLM's GEMMs alone). The grouped decode path on Gluon GEMMs (three launches: the intermediate's quantization
# in gate_up's epilogue, the reduce in down's last program) against the shipped chain, at Qwen3 M = 9-64 and
# DeepSeek-V3-TP2 M = 9-64. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/gg; rm -rf $R; mkdir -p $R
timeout 250 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 9,12,16,24,32,64 \
    --gluon-tiles grouped:default --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 9,16,32,64 \
    --gluon-tiles grouped:default --out $R/d > $R/d.log 2>&1
tar czf $OUT/gg.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "^|" $R/q.log $R/d.log | cut -c1-400
