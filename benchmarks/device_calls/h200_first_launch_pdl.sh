#!/usr/bin/env bash
# Issue #16, thirteenth session (2026-12-02), call 3: the layer's first launch PDL-launched too
# (moe_decode.FIRST_LAUNCH_PDL: it waits for the launch before at its start), and the down GEMM's K
# loop alone rotated (ROTATE_K_DOWN; call 2: DeepSeek M = 1 pairs 54.4 against 57.2 with both GEMMs
# rotated, down alone 19.8 against 22.1), pairs / grouped / chain paths, FP8 block scales and bf16, by
# the whole layer (probe_decode_pairs_variants.py). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/flp; rm -rf $R; mkdir -p $R/p $R/c $R/b
timeout 250 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4,8 --variants "grouped;pairs, first launch PDL;grouped, first launch PDL;pairs, down K rotated;grouped, down K rotated" \
    --out $R/p > $R/p.log 2>&1
timeout 120 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 16,64 --variants "chain;chain, first launch PDL" --out $R/c > $R/c.log 2>&1
timeout 90 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-bf16 --ms 1,2 \
    --variants "grouped;pairs, first launch PDL;grouped, first launch PDL" --out $R/b > $R/b.log 2>&1
tar czf $OUT/flp.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/c.log $R/b.log | head -40
grep "^|" $R/p.log
grep "^|" $R/c.log
grep "^|" $R/b.log
