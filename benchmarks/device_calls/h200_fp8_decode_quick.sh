set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
V="--vllm-file .vendor/vllm_fused_moe.py --vllm-configs .vendor/configs"
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "fp8 or cuda_graph or from_logits" > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"
timeout 300 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block --out $OUT/moe_layer_fp8.md > $OUT/bench.log 2>&1; echo "bench rc=$?"
tail -3 $OUT/pytest.txt; grep -v "^#" $OUT/moe_layer_fp8.md | tail -16 | cut -d'|' -f1-6,11-13,15-16
