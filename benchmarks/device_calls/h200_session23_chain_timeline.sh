#!/usr/bin/env bash
# Issue #16, twenty-third session (2026-12-03), call 2: the chain path's timeline on the shipped tree
# (probe_decode_timeline.py: every gate_up and down program's start, wait, K loop and end against a marker
# before the call) at the goal points it serves and still misses or only levels (Qwen3-30B-FP8 32, 64;
# DeepSeek-V3-TP2 16, 32, 64), to say how the layer's time past its two weight streams splits between the
# route launch, the gate_up -> down junction (quantization launch, two waits) and the reduce. Prediction,
# written before the call: gate_up's first waits return 3.5-4.5 us after the marker, down's 1.5-2.5 us after
# gate_up's last program, the span ends 1.5-2 us after down's last. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g23t; rm -rf $R; mkdir -p $R
timeout 250 python3 benchmarks/probe_decode_timeline.py --paths chain --cases qwen3-30b-fp8-block --ms 32,64 \
    --out $R/q > $R/q.log 2>&1
timeout 300 python3 benchmarks/probe_decode_timeline.py --paths chain --cases deepseek-v3-tp2-fp8-block \
    --ms 16,32,64 --out $R/d > $R/d.log 2>&1
tar czf $OUT/g23t.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "^|" $R/q.log $R/d.log
