#!/usr/bin/env bash
# Issue #16, fifth session (2026-12-01), last device call: the decode GPU tests (FP8 layers, deeper
# block-scaled tiles, graph replays, alignment) and the whole-layer benchmark for both FP8 cases and
# Qwen3-30B bf16 on the final tree (256-deep gate_up rows for DeepSeek-sized experts at M = 4..8).
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/final7; rm -rf $R; mkdir -p $R
timeout 130 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "fp8 or cuda_graph or alignment or deeper_than" > $R/pytest_decode.txt 2>&1
timeout 300 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --time-budget 240 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/final7.tgz -C $R .
echo "pytest: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
tail -n 4 $R/bench_moe_layer.log | grep -i -B3 error
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f1-13
