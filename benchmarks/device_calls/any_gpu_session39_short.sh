#!/usr/bin/env bash
# Issue #16, thirty-ninth session: any_gpu_session39.sh cut to fit the device time left after failed starts (about
# 500 s): the tile test of every shipped FP8 tile pair, the read-floor probe, then the inverse-RoPE knob sweep with
# fewer token counts; no inverse-RoPE GPU tests. Predictions as in any_gpu_session39.sh. Device, repo root,
# carry=[".vendor"].
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/s39; rm -rf $R; mkdir -p $R
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k every_shipped_fp8_gluon_tile > $R/tile_tests.log 2>&1
tar czf $OUT/s39.tgz -C $R .
timeout 120 python3 benchmarks/probe_decode_read_floor.py --out $R > $R/read_floor.log 2>&1
tar czf $OUT/s39.tgz -C $R .
timeout 120 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --knob-variants default,no_prefetch,prefetch_max_16 --knob-tokens 256,4096,8192,32768,65536 --out $R \
    > $R/knobs.log 2>&1
tar czf $OUT/s39.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/read_floor.log $R/knobs.log | head -30
grep -h "FAILED\|passed\|failed" $R/tile_tests.log | tail -8
cat $R/read_floor.md
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -8
