#!/usr/bin/env bash
# Issue #16, tenth session (2026-12-02): FP8 block scales at 1-4 tokens on the pairs path with x
# quantized by a launch of its own (moe_decode.PAIRS_PREQUANT_X) against the grouped path and the
# automatic choice; then the decode GPU tests. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/pairsprequant; rm -rf $R; mkdir -p $R/p
timeout 300 python3 benchmarks/probe_decode_pairs_prequant.py --out $R/p 2>&1 | tee $R/p.log | grep "^|"
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "pairs or fp8 or cuda_graph or from_logits or expert_size" 2>&1 | tail -3
tar czf $OUT/pairsprequant.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/*.log | head -40
