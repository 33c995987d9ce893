#!/usr/bin/env bash
# Issue #16, fifth session (2026-12-01), sixth device call: probe_decode_k_depth.py on Qwen3-30B
# bf16 at M = 1, 2, 4 (the decode pairs path; its rows were tuned with 128-deep tiles only) and
# Qwen3-30B FP8 at M = 16. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/kdepth2; rm -rf $R; mkdir -p $R/fp8
timeout 300 python3 benchmarks/probe_decode_k_depth.py $V --cases qwen3-30b-bf16 --out $R > $R/probe_bf16.log 2>&1
timeout 150 python3 benchmarks/probe_decode_k_depth.py $V --cases qwen3-30b-fp8-block --ms 16 --out $R/fp8 \
    > $R/probe_fp8.log 2>&1
tar czf $OUT/kdepth2.tgz -C $R .
tail -n 4 $R/probe_bf16.log $R/probe_fp8.log | grep -i -B3 error
grep -h "^|" $R/probe_bf16.log $R/probe_fp8.log | awk '!seen[$0]++' | cut -c1-1500
