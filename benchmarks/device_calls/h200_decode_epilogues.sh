#!/usr/bin/env bash
# Issue #16: where the FP8 decode layer's GEMMs lose to vLLM's at M = 2..8 (probe_decode_epilogues.py:
# each GEMM alone with its group quantization or top-k reduce switched off, the layer without its route
# launch, vLLM's GEMMs each alone). Device, repo root, carry .vendor. Not run yet (written 2026-11-30).
source benchmarks/h200_setup.sh
R=/tmp/epilogues; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_decode_epilogues.py $V \
    --ms ${MS:-1,2,4,8} --out $R > $R/probe.log 2>&1
cp $R/* $OUT/ 2>/dev/null
tail -3 $R/probe.log | grep -i error
grep "^|" $R/probe.log
