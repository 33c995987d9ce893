#!/usr/bin/env bash
# One device call for issue #16's FP8 decode work: the layer bench (bf16 goal shapes and FP8 shapes), GPU tests.
# Device, repo root, carry .vendor (vLLM files) and .whl; writes under $OUT. (The PREQUANT_X probe:
# benchmarks/probe_fp8_decode.py, same flags.)
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
V="--vllm-file .vendor/vllm_fused_moe.py --vllm-configs .vendor/configs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "fp8 or cuda_graph or from_logits" > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
timeout 400 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16,mixtral-bf16,deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --time-budget 330 --out $OUT/moe_layer.md > $OUT/bench.log 2>&1; echo "bench rc=$?"
tail -3 $OUT/pytest.txt; grep -v "^#" $OUT/moe_layer.md | tail -30
