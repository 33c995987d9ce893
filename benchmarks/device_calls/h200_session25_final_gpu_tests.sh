#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 10: the GPU tests of both decode files on the final tree
# (the Gluon down's sum launched apart over bf16 pair rows by default), after call 9 had run only its own cases.
# Device, repo root.
source benchmarks/h200_setup.sh
timeout 300 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    tests/kernels/test_moe_decode.py tests/kernels/test_fused_moe.py 2>&1 | tail -4
