#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 2: call 1 put Qwen3-30B-bf16's down on Gluon at 7.5 us alone
# against tl's 10.8, yet the layer at M = 1 stayed level (25.0 against 24.8-25.3): the Gluon pairs path has four
# launches (an x launch that only routes, gate_up, down, the reduce) where tl's has two (both GEMMs route
# themselves, down sums its top-k rows). Here each Gluon GEMM program routes its pair itself
# (moe_decode.GLUON_BF16_PAIRS_ROUTE_SELF: the kernel's ROUTE_SELF, one pass of compares a thread, no dependent
# reductions), and down's top-k sum in down (GLUON_DOWN_SUM_LAUNCH off) is timed beside it. Prediction, written
# before the call: route-self 1-1.5 us off M = 1 (about 23.5-24 us) and 1 us off M = 2; the sum in down level or
# slower. GPU tests of the bf16 Gluon layer first (route-self and ties). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g26b; rm -rf $R; mkdir -p $R
timeout 200 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "bf16 and (route or default-tiles)" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
B="GLUON_BF16_GEMMS='always'"
S="$B+GLUON_BF16_PAIRS_ROUTE_SELF=True"
timeout 170 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 1,2 \
    --gluon-tiles "[x launch]pairs:32x7/128x6+$B,[route self]pairs:32x7/128x6+$S,[route self, sum in down]pairs:32x7/128x6+$S+GLUON_DOWN_SUM_LAUNCH=False,[route self]pairs:32x8/128x8+$S" \
    --out $R/q1 > $R/q1.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 3,4 \
    --gluon-tiles "[bf16]grouped:32x4/128x4+$B,[route self]pairs:32x7/128x6+$S,[route self]pairs:64x3/128x3+$S" \
    --out $R/q2 > $R/q2.log 2>&1
tar czf $OUT/g26b.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q1.log $R/q2.log | head -30
for f in q1 q2; do grep -h "^|" $R/$f.log; done
