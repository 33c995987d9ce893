#!/usr/bin/env bash
# Issue #16, eighteenth session (2026-12-03), call 2: GPU tests of the x launch's routers apart and the grouped
# path's token tiles computed in the Gluon GEMMs, then the whole layer: down streaming 2 or 4 column tiles a
# program (pairs path), X_LAUNCH_ROUTERS_APART (pairs), GLUON_LAYOUT_IN_GEMMS with and without it (grouped),
# beside the shipped choice, tl's GEMMs and vLLM's GEMMs alone. Device, repo root, carry=[".vendor"].
# The record of that call (commit 2f16813): X_LAUNCH_ROUTERS_APART ships since; GLUON_DOWN_TILES_PER_PROGRAM
# (+downN) and GLUON_LAYOUT_IN_GEMMS measured slower and are gone.
source benchmarks/h200_setup.sh
R=/tmp/d2; rm -rf $R; mkdir -p $R/p
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py -k "routers or layout" \
    > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
G=pairs:default,pairs:default+X_LAUNCH_ROUTERS_APART=True,pairs:default+down2,pairs:default+down4
G=$G,grouped:default,grouped:default+GLUON_LAYOUT_IN_GEMMS=True
G=$G,grouped:default+GLUON_LAYOUT_IN_GEMMS=True+X_LAUNCH_ROUTERS_APART=True,grouped:default+down2
timeout 420 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,3,6,8 --gluon-tiles $G --out $R/p > $R/p.log 2>&1
tar czf $OUT/d2.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
