#!/usr/bin/env bash
# Issue #16, thirty-sixth session (2026-12-06), whichever GPU comes. Device, repo root, carry=[".vendor"].
# 1. The inverse-RoPE kernel with this session's three instruction cuts as its default (tile loop 255 -> 214 sm_90
#    instructions) against "previous" (all three off) and "two_reductions" (the third off: the H100's call-2 "both"),
#    bench_inv_rope_fp8.py --knobs-only, then the kernel's GPU tests.
#    Prediction: on an H200 default 2-5% faster than previous at T >= 4096 (T = 4096 from ~29.5 to 28.0-28.9 us,
#    84-87% of copy), level below 256; on an H100 1-2% at 8192-16384, level at 4096 (as call 2).
# 2. On an H200 only: the confirmation of the thirty-fifth session's H200 tables (any_gpu_session35_tables.sh's
#    two probes, without its tuner). Prediction (as there): every changed point faster by 0.4-1 us (Qwen3-30B-FP8 at
#    one token by about 1 us), DeepSeek-V3-TP2 at 7 tokens by 3-5 us.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
if [[ "$GPU" != *H200* ]]; then
    # (Added after call 5, which ran 1. on an H100: there, call 6 ran the full table of the shipped kernel; from
    # call 7 on an H100 does nothing: everything below has run on an H100 this session.)
    exit 0
fi
source benchmarks/h200_setup.sh
R=/tmp/r36c; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R > $R/knobs.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_inv_rope_fp8.py > $R/tests.log 2>&1
if [[ "$GPU" == *H200* ]]; then
    P="python3 benchmarks/probe_decode_gluon_layer.py $V"
    PREV=$(grep -o "PREV=\"\[previous tables\][^\"]*\"" benchmarks/device_calls/any_gpu_session35_tables.sh | head -1 \
        | sed 's/^PREV="//; s/"$//')
    # (From call 7, with 385 s of device time left: Qwen3 1, 2 and DeepSeek 7 only, no stream probe.)
    timeout 100 $P --cases qwen3-30b-fp8-block --ms 1,2 --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
    timeout 80 $P --cases deepseek-v3-tp2-fp8-block --ms 7 --gluon-tiles "$PREV" --out $R/d > $R/d.log 2>&1
fi
tar czf $OUT/r36c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
tail -1 $R/tests.log
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -8
for f in q d; do [ -f $R/$f.log ] && grep -h "^|" $R/$f.log | grep -v "^|---\|^| case | M |" \
    | awk -F'|' '{print $2"|"$3"|"$4"|"$6"|"$(NF-2)}'; done
true
