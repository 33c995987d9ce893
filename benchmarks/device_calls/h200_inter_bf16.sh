#!/usr/bin/env bash
# Issue #16, fifteenth session (2026-12-02), call 1: the FP8 block-scale layer with the intermediate kept
# in bf16 and the down GEMM run weight-only FP8 on it (moe_decode.INTER_BF16: no group quantization, no last
# writer, no quantization launch on the chain path) against the shipped paths, by the whole layer and each
# launch alone (probe_decode_pairs_variants.py), 1-64 tokens; then the timeline at Qwen3-30B-FP8 M = 1 both
# ways. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/ib; rm -rf $R; mkdir -p $R/p $R/c
timeout 240 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4,8 --variants "pairs, inter bf16;grouped;grouped, inter bf16" --out $R/p > $R/p.log 2>&1
timeout 150 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 16,64 --variants "chain;chain, inter bf16" --out $R/c > $R/c.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1 --paths pairs \
    --out $R/t0 > $R/t0.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1 --paths pairs \
    --switch INTER_BF16=True --out $R/t1 > $R/t1.log 2>&1
tar czf $OUT/ib.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/c.log $R/t0.log $R/t1.log | head -30
grep "^|" $R/p.log
grep "^|" $R/c.log
grep -h "^|" $R/t0.log $R/t1.log | awk '!seen[$0]++'
