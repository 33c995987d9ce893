#!/usr/bin/env bash
# Issue #16, fifth session (2026-12-01), fourth device call: call 3 again with the down GEMM's
# early layout reads as plain L2 loads (ld.global.cg; call 3's volatile loads took it from 20 to
# 45 us alone) and the 256-deep DeepSeek gate_up rows timed with the switch off; GPU graph-replay
# and FP8 tests first. Device, repo root, carry .vendor.
# The switch measured no faster (slower at DeepSeek M = 1 and 2) and is gone since: branch layoutfirst
# keeps it and the probe; the 256-deep DeepSeek rows are in moe_configs.DECODE_TILE_TABLE.
source benchmarks/h200_setup.sh
R=/tmp/layoutwait2; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "cuda_graph or fp8_layer or bf16_layer" > $R/pytest.log 2>&1
timeout 400 python3 benchmarks/probe_decode_layout_wait.py $V --out $R > $R/probe.log 2>&1
tar czf $OUT/layoutwait2.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
tail -n 3 $R/pytest.log
grep "^|" $R/probe.log | cut -c1-1500
