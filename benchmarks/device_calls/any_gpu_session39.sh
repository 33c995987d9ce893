#!/usr/bin/env bash
# Issue #16, thirty-ninth session (2026-12-06): one call for whichever Hopper GPU comes. Device, repo root,
# carry=[".vendor"].
# 1. Every tile pair the FP8 Gluon tables ship (the H200's GLUON_TILES_AT and each GLUON_TILES_ON_GPU), forced on
#    this GPU, with experts of its size class (the large class at its size for the first time):
#    test_every_shipped_fp8_gluon_tile_matches_reference_across_graph_replays, 30 cases. Prediction: all pass (the
#    tuner and the probes checked each point's output against the fp32 reference, errors 1.6e-3 to 6.8e-3).
# 2. The read-floor probe (any_gpu_session38_read_floor.sh says what it predicts).
# 3. The inverse-RoPE knob sweep and GPU tests (any_gpu_session38.sh says what it predicts).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/s39; rm -rf $R; mkdir -p $R
timeout 140 python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k every_shipped_fp8_gluon_tile > $R/tile_tests.log 2>&1
tar czf $OUT/s39.tgz -C $R .
timeout 150 python3 benchmarks/probe_decode_read_floor.py --out $R > $R/read_floor.log 2>&1
tar czf $OUT/s39.tgz -C $R .
timeout 160 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --knob-variants default,previous,no_prefetch,prefetch_max_16,token_run_4 \
    --knob-tokens 1,16,256,1024,4096,8192,16384,32768,65536 --out $R > $R/knobs.log 2>&1
tar czf $OUT/s39.tgz -C $R .
timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_inv_rope_fp8.py > $R/rope_tests.log 2>&1
tar czf $OUT/s39.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/read_floor.log $R/knobs.log | head -30
grep -h "FAILED\|passed\|failed" $R/tile_tests.log | tail -8
tail -1 $R/rope_tests.log
cat $R/read_floor.md
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -12
