#!/usr/bin/env bash
# Issue #16, twelfth session (2026-12-02): the pairs path with each program's weight tile asked of
# the L2 as soon as the program has routed itself (moe_decode.L2_PREFETCH_DOWN / _GATE_UP: one
# prefetch per line, or one bulk prefetch per row), and the per-pair handoff (PAIR_READY_HANDOFF),
# by the whole layer against the shipped pairs path (probe_decode_pairs_variants.py); the timeline of
# the down prefetch at Qwen3-30B-FP8 M = 1-2. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/l2pf; rm -rf $R; mkdir -p $R/p $R/b $R/t
VARS="pairs, per-pair handoff;pairs, down L2 lines;pairs, down L2 bulk;pairs, both L2 bulk;pairs, handoff + down L2 bulk"
timeout 290 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4 --variants "$VARS" --out $R/p > $R/p.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1,2 --paths pairs \
    --switch L2_PREFETCH_DOWN=1 --out $R/t > $R/t.log 2>&1
timeout 150 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-bf16 --ms 1,2 \
    --variants "pairs, down L2 lines;pairs, down L2 bulk;pairs, both L2 bulk" --out $R/b > $R/b.log 2>&1
tar czf $OUT/l2pf.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/t.log $R/b.log | head -40
grep "^|" $R/p.log
grep "^|" $R/b.log
grep "^|" $R/t.log
