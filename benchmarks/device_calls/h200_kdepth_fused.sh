#!/usr/bin/env bash
# Issue #16, sixth session (2026-12-01), second device call: fused_moe's grouped GEMMs with FP8
# block-scaled tiles 256 / 512 deep (K_UNROLL, probe_fused_moe_k_depth.py) at the token counts the
# unfused layer serves, and inverse-RoPE's pair_tile knob against the default and vLLM's kernel at
# 11 token counts (bench_inv_rope_fp8.py --knobs-only), with the GPU maths of both. Device, repo
# root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/kdf; rm -rf $R; mkdir -p $R/rope
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_fused_moe_math.py > $R/pytest_moe.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py \
    > $R/pytest_rope.log 2>&1
timeout 100 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
timeout 360 python3 benchmarks/probe_fused_moe_k_depth.py $V --out $R > $R/probe.log 2>&1
tar czf $OUT/kdf.tgz -C $R .
tail -n 3 $R/pytest_moe.log $R/pytest_rope.log
tail -n 4 $R/probe.log | grep -i -B3 error
tail -n 8 $R/rope.log | cut -c1-1500
grep -h "^|" $R/probe.log | cut -c1-1200
