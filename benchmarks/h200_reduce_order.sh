#!/usr/bin/env bash
# Issue #16, tenth session (2026-12-01): the down GEMM's top-k reduce overlapped with its stream
# (moe_decode.DOWN_TILES_BY_COLUMN), per token (DOWN_REDUCE_PER_TOKEN), and the chain's launches ending in the grouped down GEMM (one
# launch fewer). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/reduceorder; rm -rf $R; mkdir -p $R/p
timeout 420 python3 benchmarks/probe_decode_reduce_order.py --out $R/p 2>&1 | tee $R/p.log | grep "^|"
tar czf $OUT/reduceorder.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/*.log | head -40
