#!/usr/bin/env bash
# Issue #16, eleventh session (2026-12-02): FP8 block scales on the pairs path with the intermediate
# quantized by the down GEMM (QUANTIZE_INTER off) against gate_up quantizing it, the grouped path and a
# 128-row down tile (probe_decode_inter_quant.py); the timeline of the first variant pair at Qwen3 M = 1-2;
# the decode GPU tests of the pairs path. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/interquant; rm -rf $R; mkdir -p $R/p $R/t
timeout 260 python3 benchmarks/probe_decode_inter_quant.py --out $R/p > $R/p.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1,2 --paths pairs \
    --switch QUANTIZE_INTER=False --out $R/t > $R/t.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "pairs" > $R/gpu.log 2>&1
tar czf $OUT/interquant.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/t.log | head -40
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
grep "^|" $R/p.log
grep "^|" $R/t.log
