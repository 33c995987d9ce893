#!/usr/bin/env bash
# Issue #16, eighth session (2026-12-01): the bare FP8 block-scaled decode weight stream with pointer
# loads against TensorDescriptor (TMA) loads, four GEMM shapes, 8/16/32 expert slots; and inverse-RoPE's
# GPU maths with the streaming stores now the default.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/tma; rm -rf $R; mkdir -p $R/tma
timeout 60 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py \
    > $R/rope_gpu.log 2>&1; tail -1 $R/rope_gpu.log
timeout 400 python3 benchmarks/probe_decode_tma.py --out $R/tma > $R/tma.log 2>&1
tar czf $OUT/tma.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/*.log | head -30
grep "^|" $R/tma/probe_decode_tma.md
