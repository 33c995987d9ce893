#!/usr/bin/env bash
# Issue #16, ninth session (2026-12-01): inverse-RoPE beside a torch copy of the same bytes at each T
# (the ceiling at that size, not at 1 GiB), two-warp two-row tiles (64 warps an SM where registers
# allow), and the decode MoE's GPU maths on the shipped tree.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/ropecopy; rm -rf $R; mkdir -p $R/rope
timeout 240 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode.py \
    -k "fp8 or cuda_graph or chain or alignment or from_logits" > $R/moe_gpu.log 2>&1; tail -1 $R/moe_gpu.log
timeout 300 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
tar czf $OUT/ropecopy.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback\|FAILED" $R/*.log | head -30
grep "^|\|copy" $R/rope.log | tail -9
