#!/usr/bin/env bash
# Issue #16: FP8 block scales on the decode layer's two-launch pairs path (moe_decode.FP8_PAIRS_MAX_TOKENS)
# side by side with the shipped three-launch layer and vLLM's GEMMs (both, each alone), after the GPU
# tests of the decode layer. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/fp8pairs; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "fp8 or pairs or cuda_graph" \
    > $R/pytest_decode.txt 2>&1
timeout 300 python3 benchmarks/tune_moe_decode.py $V \
    --skip-tiles --ms ${MS:-1,2,4,8} --out $R > $R/tune.log 2>&1
cp $R/* $OUT/ 2>/dev/null
echo "pytest: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
tail -3 $R/tune.log | grep -i error
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-900
