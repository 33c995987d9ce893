#!/usr/bin/env bash
# Issue #16, one device call: GPU kernel tests and the three benchmarks on the committed tree.
# Device, repo root, after `pip install --no-deps --no-build-isolation -e .`; carry .vendor (vLLM 0.33.0 files).
# Everything lands in $OUT/issue16.tgz; the tables are printed last.
set -u
export PYTHONUNBUFFERED=1
V="--vllm-file .vendor/vllm_fused_moe.py --vllm-configs .vendor/configs"
R=/tmp/issue16; rm -rf $R; mkdir -p $R/rope
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
P="python3 -m pytest -q -p no:cacheprovider"
timeout 90 $P tests/kernels/test_moe_decode.py -k "fp8 or cuda_graph or from_logits or bf16_layer" > $R/pytest_decode.txt 2>&1
timeout 50 $P -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py > $R/pytest_inv_rope.txt 2>&1
timeout 140 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16,mixtral-bf16,deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --time-budget 95 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
timeout 100 python3 benchmarks/bench_fused_moe.py $V --out $R/fused_moe.json --time-budget 60 > $R/bench_fused_moe.log 2>&1
timeout 60 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --skip-sweep --out $R/rope > $R/bench_inv_rope.log 2>&1
tar -C /tmp -czf $OUT/issue16.tgz issue16
for f in $R/pytest_*.txt; do echo "$f: $(tail -1 $f)"; done
grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-6,11-13,15 | tail -30
tail -40 $R/bench_fused_moe.log | cut -c1-220
tail -25 $R/bench_inv_rope.log | cut -c1-200
