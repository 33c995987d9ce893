#!/usr/bin/env bash
# Issue #16, twenty-fourth session (2026-12-03), call 1: the grouped path's Gluon gate_up on a grid of (expert,
# column tile) (GLUON_EXPERT_MAJOR_GATE_UP), each program copying its expert's first NUM_STAGES - 1 K steps of
# weights into shared memory before it waits for the route launch. Prediction, written before the call: the
# route launch's 3.6-4.3 us of idle HBM mostly filled where most experts are chosen (Qwen3-30B-FP8 M = 32, 64:
# 87% / 98% of 128 experts), so the grouped path on Gluon 2-4 us faster there than without it; less at 8-16
# (40% / 64% chosen). Whether that beats the chain (3.6-4.5% ahead of the grouped path on Gluon at 48-64) is
# the open question. GPU tests first (the refactored kernel's shipped tiles, and the new grid against the fp32
# reference and tl's kernel). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g24a; rm -rf $R; mkdir -p $R
timeout 130 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "expert_major or shipped-tiles" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[grouped]grouped:default,[em]grouped:default+GLUON_EXPERT_MAJOR_GATE_UP=True"
E="$E,[em16]grouped:default+GLUON_EXPERT_MAJOR_GATE_UP=True+GLUON_BLOCK_M=16"
E="$E,[em 32x8]grouped:32x8/64x3+GLUON_EXPERT_MAJOR_GATE_UP=True"
timeout 420 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 8,16,32,64 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
tar czf $OUT/g24a.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'
grep -h "^|" $R/q.log | awk -F"|" '{n=(NF-5)/2; s="|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'
