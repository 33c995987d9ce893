#!/usr/bin/env bash
# Issue #16, thirty-third session (2026-12-06), call 3, whichever GPU comes: the decode MoE GPU tests over the tree
# with GLUON_TILES_FROM_COUNTS_MIN_TOKENS by size class, after call 2's run stopped at the bit-for-bit test (it
# asked for tiles from counts at one token on small experts; it now sets the threshold to 1 itself). No -x: every
# test runs. Device, repo root.
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
mkdir -p $OUT
timeout 420 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py tests/kernels/test_moe_decode.py \
    -k "not accumulating" -p no:cacheprovider > $OUT/tests.log 2>&1
grep -h "^FAILED\|^ERROR" $OUT/tests.log | head -10
tail -1 $OUT/tests.log
