#!/usr/bin/env bash
# Issue #16, session 2026-11-30 (third), final call: GPU tests, the decode switches side by side,
# and the whole-layer benchmark on the committed tree. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/final3; rm -rf $R; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
P="python3 -m pytest -q -p no:cacheprovider"
timeout 120 $P tests/kernels/test_moe_decode.py -k "fp8 or cuda_graph or from_logits or bf16_layer or alignment" \
    > $R/pytest_decode.txt 2>&1
timeout 50 $P -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py > $R/pytest_inv_rope.txt 2>&1
timeout 150 python3 benchmarks/tune_moe_decode.py $V --skip-tiles --ms 1,2,4,8 --out $R > $R/tune.log 2>&1
timeout 330 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --time-budget 270 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
cp $R/* $OUT/ 2>/dev/null
for f in $R/pytest_*.txt; do echo "$f: $(tail -1 $f)"; done
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-400
grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-6,11-13,15 | tail -30
