#!/usr/bin/env bash
# Issue #16, thirty-eighth session (2026-12-06), when no H200 comes: on an H100 the read-floor probe (its script
# any_gpu_session38_read_floor.sh says what it asks) and the inverse-RoPE knob sweep with vLLM's kernel now writing
# into the same per-set buffers as ours (433ea49). Device, repo root, carry=[".vendor"].
# Prediction (sweep): vLLM's kernel slower than in the thirty-seventh session's sweeps at T <= 1024 (T = 256: 5.03-5.06
# us there, about 5.5-5.8 now, as ours paid 0.7 us for per-set buffers); ours unchanged.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/s38; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_decode_read_floor.py --out $R > $R/read_floor.log 2>&1
tar czf $OUT/s38.tgz -C $R .
timeout 240 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R > $R/knobs.log 2>&1
tar czf $OUT/s38.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
cat $R/read_floor.md
sed -n '/^knob sweep:/,$p' $R/knobs.log | head -14
