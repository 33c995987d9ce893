#!/usr/bin/env bash
# Issue #16, one device call: the decode layer's GPU tests, then tune_moe_decode.py (switches side by
# side, tiles per stage). Device, repo root, carry .vendor (vLLM 0.33.0 files). Tables printed last.
source benchmarks/h200_setup.sh
R=/tmp/tune; rm -rf $R; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "fp8 or cuda_graph or alignment or from_logits" > $R/pytest_decode.txt 2>&1
timeout ${TUNE_TIMEOUT:-470} python3 benchmarks/tune_moe_decode.py --vllm-file .vendor/vllm_fused_moe.py \
    --vllm-configs .vendor/configs --time-budget ${TUNE_BUDGET:-280} --out $R > $R/tune.log 2>&1
cp $R/* $OUT/ 2>/dev/null
echo "pytest: $(tail -1 $R/pytest_decode.txt)"
grep "^#" $R/tune.log | cut -c1-200 | tail -8
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-330
