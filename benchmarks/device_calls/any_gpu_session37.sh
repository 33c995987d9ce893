#!/usr/bin/env bash
# Issue #16, written in the thirty-sixth session (2026-12-06) for the next session's first call, and extended in the
# thirty-seventh before it ran (no device came at first). Device, repo root, carry=[".vendor"].
# 0. On any GPU: the knob sweep now has token_run_4 / token_run_8 (a tile one head's run of 4 / 8 tokens, its MN-major
#    scales stored once a run). Prediction: if the scattered scale words are what vLLM's layout costs (the nineteenth
#    session's probe: row scales 1.8 us faster at T = 4096 on an H200), token_run_4 1-2 us faster than default at
#    T = 4096-8192 on an H200 (0.3-1 us on an H100), 2-6% at 16384-32768, slower at T <= 64 (rows in sequence);
#    token_run_8 (93 registers: fewer programs resident) slower than token_run_4 at every T >= 1024.
#    Everything after the sweep and the inverse-RoPE GPU tests waits for an H200; 3 (the stream probe) moved to a
#    call of its own, so this one stays inside the 600 s a call may take.
# 1. Inverse RoPE, the thirty-sixth session's instruction cuts (255 -> 214 a row) against the kernel before
#    (bench_inv_rope_fp8.py --knobs-only: default / previous / two_reductions / no_prefetch), then its GPU tests.
#    Prediction: default 2-5% faster than previous at T >= 4096 on the H200 (T = 4096 from ~29.5 to 28.0-28.9 us,
#    84-87% of copy), level below 256 (the H100: level at 4096, 1.6-1.7% at 8192-16384); no_prefetch (184
#    instructions a row against 214) within 2% of default either way (the second session: 3-4% slower at 255).
# 2. The thirty-fifth session's H200 tables beside the previous ones (any_gpu_session35_tables.sh's two probes).
#    Prediction: every changed point faster by 0.4-1 us (Qwen3-30B-FP8 at one token by about 1 us), DeepSeek-V3-TP2
#    at 7 tokens by 3-5 us.
# 3. probe_inv_rope_ctas.py: one-warp against multi-warp streams of the same row bytes. Prediction (from the H100,
#    where one-warp streams came within 1.8% of a copy at T = 4096): within 3% on the H200 too.
# Then, in a second call: any_gpu_session36_tests.sh (the decode MoE GPU tests, 269 passed on an H100 in the
# thirty-sixth session) on the H200's own entries.
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
    sed -n '/^knob sweep:/,$p' $R/knobs.log | head -12
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
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -12
for f in q d; do grep -h "^|" $R/$f.log | grep -v "^|---\|^| case | M |" | awk -F'|' '{print $2"|"$3"|"$4"|"$6"|"$(NF-2)}'; done
