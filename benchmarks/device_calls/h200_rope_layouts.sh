#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 9: which part of vLLM's layout (MN-major pow2 scales, 4 head
# groups) costs the inverse-RoPE kernel its 4 points at T = 4096 (call 8: 84% of copy, 88% with row fp32 scales and
# one group). Device, repo root.
source benchmarks/h200_setup.sh
timeout 200 python3 benchmarks/probe_inv_rope_layouts.py --tokens 1024,4096,8192,32768 --out $OUT 2>&1 | tail -12
