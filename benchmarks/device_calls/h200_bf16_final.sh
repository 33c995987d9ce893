#!/usr/bin/env bash
# Issue #16, seventh session (2026-12-01): the bf16 decode layers on the final tree (fused_moe_decode
# takes the chain path for bf16 past the pairs path) and the decode tests on the GPU. Device, repo
# root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/bf16final; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "bf16 or cuda_graph or chain or alignment" > $R/pytest_decode.txt 2>&1
timeout 300 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16,mixtral-bf16 \
    --ms 1,2,3,4,8,16,32,64 --time-budget 240 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/bf16final.tgz -C $R .
echo "pytest decode: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
tail -n 4 $R/bench_moe_layer.log | grep -i -B3 error
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f1-13
