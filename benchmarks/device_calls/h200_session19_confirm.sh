#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 7: after call 6's change (Gluon GEMMs for Qwen3-30B-like FP8
# at M = 5 on the pairs path and M = 7 on the grouped path), the GPU tests of the Gluon layer at the new odd
# token counts, then the shipped layer at Qwen3 M = 4-9 (twice: a no-op switch repeats it) against vLLM's
# GEMMs alone. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/c19; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py -k "pairs-5 or grouped-13 or measured or auto" > $R/gpu.log 2>&1
echo "pytest gluon: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 4,5,6,7,8,9 \
    --gluon-tiles "auto:default+FIRST_LAUNCH_PDL=True" --out $R/q > $R/q.log 2>&1
tar czf $OUT/c19.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log | cut -d"|" -f1-4,6,7,10,11
