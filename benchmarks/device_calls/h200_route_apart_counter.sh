#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 2: the route launch's routers apart in place of its counter
# path (ROUTE_ALIGN_APART="counter"; call 1 measured the route launch alone 4.5-4.8 -> 3.7-3.9 us at
# DeepSeek-V3-TP2 M = 5-8, slower or level against the few-token router) against the shipped launch ("never"),
# where the counter path runs: DeepSeek M = 5, 6, 8, 16, 32, 64; Qwen3-30B-FP8 M = 16, 32, 64 (chain path);
# bf16 Qwen3-30B M = 16, 64 and Mixtral M = 16, 64 (chain). GPU tests of the switch first.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/rc; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "apart or align" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
G="auto:default+ROUTE_ALIGN_APART='counter'"
timeout 170 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 5,6,8,16,32,64 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 16,32,64 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 140 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16,mixtral-bf16 --ms 16,64 \
    --gluon-tiles "$G" --out $R/b > $R/b.log 2>&1
tar czf $OUT/rc.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/d.log $R/q.log $R/b.log | head -30
grep -h "^|" $R/d.log $R/q.log $R/b.log | cut -c1-400
