#!/usr/bin/env bash
# Issue #16, seventh session (2026-12-01), last device call: the GPU maths of the decode layer (the
# chain path's bit equality with softmax_topk + fused_moe, FP8 against the fp32 reference at odd M,
# CUDA-graph replays with new inputs, the route launch's alignment with ranks taken early), the
# route launch's alignment timed both ways (probe_decode_route_ranks.py), and the whole-layer
# benchmark on the final tree, where fused_moe_decode takes the chain path for FP8 block scales
# above 8 tokens. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/final10; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "chain or fp8 or cuda_graph or from_logits or alignment" > $R/pytest_decode.txt 2>&1
timeout 120 python3 benchmarks/probe_decode_route_ranks.py --out $R > $R/probe_ranks.log 2>&1
timeout 330 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --ms 1,2,4,8,12,16,32,64 --time-budget 270 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/final10.tgz -C $R .
echo "pytest decode: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
grep -i -B2 -A6 "error\|Traceback" $R/probe_ranks.log | head -20
grep "^|" $R/probe_decode_route_ranks.md
tail -n 4 $R/bench_moe_layer.log | grep -i -B3 error
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f1-13
