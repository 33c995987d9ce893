#!/usr/bin/env bash
# Issue #16, sixth session (2026-12-01), first device call: the inverse-RoPE tile loop pipelined by the
# compiler (bench_inv_rope_fp8.py --pipeline-only) and the decode layer's down GEMM on a persistent grid
# (probe_decode_persistent.py), with the GPU maths of both. Device, repo root, carry .vendor.
# Kept as the record of that call (commit ad4b687): both were slower everywhere and were removed
# (benchmarks/results/moe_layer.md and inv_rope_fp8.md, sixth session); the persistent kernel and
# its probe live on branch persistentdown, and --pipeline-only is now --knobs-only.
source benchmarks/h200_setup.sh
R=/tmp/pers; rm -rf $R; mkdir -p $R/rope
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "persistent or cuda_graph" \
    > $R/pytest_moe.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py \
    > $R/pytest_rope.log 2>&1
timeout 100 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --pipeline-only \
    --out $R/rope > $R/rope.log 2>&1
timeout 400 python3 benchmarks/probe_decode_persistent.py $V --out $R > $R/probe.log 2>&1
tar czf $OUT/pers.tgz -C $R .
tail -n 3 $R/pytest_moe.log $R/pytest_rope.log
tail -n 4 $R/probe.log | grep -i -B3 error
tail -n 16 $R/rope.log | cut -c1-700
grep -h "^|" $R/probe.log | cut -c1-1200
