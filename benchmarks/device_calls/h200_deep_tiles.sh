#!/usr/bin/env bash
# Issue #16, twelfth session (2026-12-02), call 3: weight tiles 256 / 512 bytes of each row a pipeline
# stage (K_UNROLL 2 / 4) on the pairs path at 1-4 tokens and the grouped path at 8, FP8 block scales;
# the per-pair handoff with a 0.5 us sleep between polls; the chain path's timeline at 16-64 tokens.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/deep; rm -rf $R; mkdir -p $R/p $R/g $R/b $R/t
PV="pairs, handoff, poll every 0.5 us;pairs, gate_up 256 deep s3;pairs, gate_up 256 deep s4;pairs, gate_up 512 deep s2"
PV="$PV;pairs, down 256 deep s2;pairs, both 256 deep s3 / s2"
timeout 240 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4 --variants "$PV" --out $R/p > $R/p.log 2>&1
timeout 120 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 8 --variants "grouped;grouped, gate_up 256 deep s3;grouped, both 256 deep s3 / s2" --out $R/g > $R/g.log 2>&1
timeout 80 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-bf16 --ms 1,2 \
    --variants "pairs, gate_up 256 deep s3;pairs, down 256 deep s2" --out $R/b > $R/b.log 2>&1
timeout 100 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 16,32,64 --paths chain \
    --out $R/t > $R/t.log 2>&1
tar czf $OUT/deep.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/g.log $R/b.log $R/t.log | head -40
for f in p g b t; do grep "^|" $R/$f.log | cut -c1-900; done
