#!/usr/bin/env bash
# Issue #16, thirty-fourth session (2026-12-06), call 3, whichever GPU comes: tl's gate_up before the Gluon down on
# the pairs path (benchmarks/probe_decode_mixed_gemms.py). Call 2 on an H100: DeepSeek-V3-TP2's tl gate_up alone
# faster than Gluon's (M = 1 45.5 against 47.4 us, M = 2 84.6 against 92.1), its Gluon down faster than tl's (21.3
# against 26.0, 41.5 against 46.0); shipped M = 2 130.1 against vLLM's GEMMs alone 129.3. Prediction on an H100:
# mixed DeepSeek M = 2 126-128.5 (ahead of vLLM's), M = 1 67-68.5 (shipped 69.0); Qwen3-30B-FP8 (tl gate_up slower
# there: 12.5 against 11.4, 23.7 against 21.2) slower mixed than shipped. Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g34c; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_decode_mixed_gemms.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,3,4 \
    --out $R/d > $R/d.log 2>&1
timeout 150 python3 benchmarks/probe_decode_mixed_gemms.py $V --cases qwen3-30b-fp8-block --ms 1,2 \
    --out $R/q > $R/q.log 2>&1
tar czf $OUT/g34c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/d.log $R/q.log | head -40
grep -h "^|" $R/d.log $R/q.log | cut -d'|' -f1-10,18-
