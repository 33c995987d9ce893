#!/usr/bin/env bash
# Issue #16, fifth session (2026-12-01), first device call: the decode down GEMM split over K
# (benchmarks/probe_decode_split_k.py, alternating with the table's unsplit rows), then the GPU
# maths of the split and of the FP8 / graph-replay decode tests.
# Device, repo root, carry .vendor.
# The record of that call (commit d2f3adf): the split measured slower at every point and is gone
# since (branch downsplitk keeps it and the probe; results in benchmarks/results/moe_layer.md).
source benchmarks/h200_setup.sh
R=/tmp/splitk; rm -rf $R; mkdir -p $R
timeout 420 python3 benchmarks/probe_decode_split_k.py $V --out $R > $R/probe.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "split or fp8 or cuda_graph" \
    > $R/pytest.log 2>&1
tar czf $OUT/splitk.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
tail -n 3 $R/pytest.log
grep "^|" $R/probe.log | cut -c1-1200
