#!/usr/bin/env bash
# Issue #16, written in the thirty-sixth session (2026-12-06) for the next session's first call, extended in the
# thirty-seventh (call 1 there, on an H100, ran its H100 branch at e65ade7; no H200 came all session). Device, repo
# root, carry=[".vendor"].
# 1. On any GPU: the inverse-RoPE knob sweep (bench_inv_rope_fp8.py --knobs-only, T = 1..65536; its KNOB_VARIANTS:
#    default, previous, no_prefetch, prefetch_max_8/16/24, token_run_4) and the inverse-RoPE GPU tests.
#    Predictions: on an H200, default (213 instructions a row) 1.5-4% faster than previous (255) at T >= 4096
#    (T = 4096 28.0-28.9 us); no_prefetch 3-4% faster than default at T >= 8192 and slower at 4096 and below, as on
#    the H100 (the second session's H200 had it 3-4% slower at 1024-8192, with 255 instructions); prefetch_max_16
#    the best of both on both GPUs (H200 T = 65536 >= 88% of copy); T = 4096 still short of 88% on the H200 unless
#    token_run_4 gets the nineteenth session's 1.8 us of MN-major scale words back (level on the H100).
# 2. On an H200 only: the thirty-fifth session's H200 MoE tables beside the previous ones (any_gpu_session35_tables.sh's
#    two probes). Prediction: every changed point faster by 0.4-1 us (Qwen3-30B-FP8 at one token by about 1 us),
#    DeepSeek-V3-TP2 at 7 tokens by 3-5 us. Then, in calls of their own: any_gpu_session36_tests.sh (the decode MoE
#    GPU tests on the H200's entries) and probe_inv_rope_ctas.py.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/r37; rm -rf $R; mkdir -p $R
timeout 240 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R > $R/knobs.log 2>&1
tar czf $OUT/r37.tgz -C $R .
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_inv_rope_fp8.py > $R/rope_tests.log 2>&1
if [[ "$GPU" != *H200* ]]; then
    tar czf $OUT/r37.tgz -C $R .
    grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
    tail -1 $R/rope_tests.log
    sed -n '/^knob sweep:/,$p' $R/knobs.log | head -14
    exit 0
fi
P="python3 benchmarks/probe_decode_gluon_layer.py $V"
PREV=$(grep -o "PREV=\"\[previous tables\][^\"]*\"" benchmarks/device_calls/any_gpu_session35_tables.sh | head -1 \
    | sed 's/^PREV="//; s/"$//')
timeout 150 $P --cases qwen3-30b-fp8-block --ms 1,2,5,7,12 --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
timeout 120 $P --cases deepseek-v3-tp2-fp8-block --ms 3,7 --gluon-tiles "$PREV" --out $R/d > $R/d.log 2>&1
tar czf $OUT/r37.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
tail -1 $R/rope_tests.log
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -14
for f in q d; do grep -h "^|" $R/$f.log | grep -v "^|---\|^| case | M |" | awk -F'|' '{print $2"|"$3"|"$4"|"$6"|"$(NF-2)}'; done
