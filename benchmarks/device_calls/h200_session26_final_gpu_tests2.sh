#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 8: after call 7 the GPU tests' graph-replay loop became one
# helper shared by the tl and Gluon decode tests (tests/kernels/test_moe_decode.py's _replays_with_new_inputs) and
# the FP8 and bf16 Gluon replay tests one (_replay_gluon_beside_tl): the decode layer's GPU tests again, both files.
# Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/g26h; rm -rf $R; mkdir -p $R
timeout 480 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    tests/kernels/test_moe_decode.py > $R/gpu.log 2>&1
tar czf $OUT/g26h.tgz -C $R .
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
