#!/usr/bin/env bash
# Issue #16, fifth session (2026-12-01), third device call: the decode GPU tests (FP8, bf16 layers,
# graph replays, alignment) with the grouped down GEMM reading the layout before it waits, then
# benchmarks/probe_decode_layout_wait.py (that switch off / on, and 256-deep DeepSeek gate_up rows).
# The record of call 3 (828f3a2: the layout read with volatile loads, the deep rows with the switch on).
# Device, repo root, carry .vendor.
# The switch measured no faster (slower at DeepSeek M = 1 and 2) and is gone since: branch layoutfirst
# keeps it and the probe; the 256-deep DeepSeek rows are in moe_configs.DECODE_TILE_TABLE.
source benchmarks/h200_setup.sh
R=/tmp/layoutwait; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "fp8 or cuda_graph or alignment or bf16_layer or deeper_than" > $R/pytest.log 2>&1
timeout 400 python3 benchmarks/probe_decode_layout_wait.py $V --out $R > $R/probe.log 2>&1
tar czf $OUT/layoutwait.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
tail -n 3 $R/pytest.log
grep "^|" $R/probe.log | cut -c1-1500
