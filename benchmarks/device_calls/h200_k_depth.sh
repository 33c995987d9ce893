#!/usr/bin/env bash
# Issue #16, fifth session (2026-12-01), second device call: FP8 block-scaled decode tiles 256 and
# 512 deep (benchmarks/probe_decode_k_depth.py, alternating with the table's rows), then the GPU
# maths of deeper tiles and of the FP8 / graph-replay decode tests.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/kdepth; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "deeper_than or fp8_layer or cuda_graph" > $R/pytest.log 2>&1
timeout 400 python3 benchmarks/probe_decode_k_depth.py $V --out $R > $R/probe.log 2>&1
tar czf $OUT/kdepth.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
tail -n 3 $R/pytest.log
grep "^|" $R/probe.log | cut -c1-1500
