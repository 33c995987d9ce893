#!/usr/bin/env bash
# Issue #16, fifth session (2026-12-01), seventh device call: the bf16 decode GPU tests and the
# whole-layer benchmark for Qwen3-30B bf16 at M = 1..8 on the final tree (the M = 2 row's down tile
# now 256 deep, from h200_k_depth2.sh). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/final8; rm -rf $R; mkdir -p $R
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "bf16_layer or cuda_graph" \
    > $R/pytest_decode.txt 2>&1
timeout 200 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16 --ms 1,2,4,8 --out $R/moe_layer.md \
    > $R/bench_moe_layer.log 2>&1
tar czf $OUT/final8.tgz -C $R .
echo "pytest: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
tail -n 4 $R/bench_moe_layer.log | grep -i -B3 error
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f1-15
