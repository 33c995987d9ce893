#!/usr/bin/env bash
# Issue #16, thirty-sixth session (2026-12-06), whichever GPU comes. Device, repo root, carry=[".vendor"].
# 1. On an H200 only (call 2 ran it on an H100): any_gpu_session36_rope.sh, the inverse-RoPE knob sweep
#    (pow2_inverse_bits, rope_masked_load, both) and the kernel's GPU tests.
#    Prediction (as there): both knobs 1.5-4% faster at T >= 4096 on the H200 (the H100 gave 1.3% at 8192-16384,
#    level at 4096 and 32768).
# 2. probe_inv_rope_ctas.py: is the ~3.5 us a launch beyond the copy at T = 4096 the start of 4224 one-warp
#    programs? Prediction: if it is, the empty grid of 4224 one-warp programs takes >= 2 us and the multi-warp
#    streams beat the one-warp stream at T = 4096 by >= 1 us; if not, the empty grids are < 1 us apart and the
#    streams level within 1%. Then the inverse-RoPE kernel a warp a row (rows_per_warp_kernel) at 1, 2, 4, 8 warps
#    beside the shipped kernel. Prediction: its one-warp form (222 instructions a row against the shipped 255, the
#    knobs' maths) 1-3% faster at T >= 8192; its multi-warp forms (355 instructions and 10 CTA barriers a tile
#    in the loop: Triton's layouts for the pair loads and MN-major scale stores are not a warp a row) slower
#    unless the start of programs is the cost.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
if [[ "$GPU" == *H200* ]]; then
    bash benchmarks/device_calls/any_gpu_session36_rope.sh
else
    source benchmarks/h200_setup.sh
fi
R=/tmp/c36; rm -rf $R; mkdir -p $R
timeout 420 python3 benchmarks/probe_inv_rope_ctas.py --out $R > $R/ctas.log 2>&1
tar czf $OUT/c36.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/ctas.log | head -30
sed -n '/^NVIDIA/,$p' $R/ctas.log
