#!/usr/bin/env bash
# Issue #16, twenty-fourth session (2026-12-03), call 2: call 1's expert-major Gluon gate_up with only its first
# wave copying before the wait (GLUON_EXPERT_MAJOR_PREFETCH="first_wave": as many programs as fit on the GPU at
# once by shared memory; the later ones start after the route launch and copy only for an expert with tiles).
# Call 1 lost at every point, at 8-16 tokens mostly to programs of unchosen experts copying for nothing. This
# call asks whether copying during the route launch pays at all once that waste is gone. Prediction, written
# before the call: if it overlaps, gate_up's in-layer time drops below the grouped path's by up to the chosen
# fraction of the first wave's bytes (Qwen3-30B-FP8 M = 8: 40% of about 20 MB, 1-2 us: about 66-67 against
# 67.9; M = 16: 64%, 2-3 us); if not, level with or slower than the grouped path, and the route launch's idle
# HBM cannot be used by gate_up's programs. GPU tests first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g24b; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "expert_major" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[grouped]grouped:default,[em]grouped:default+GLUON_EXPERT_MAJOR_GATE_UP=True"
E="$E,[em first wave]grouped:default+GLUON_EXPERT_MAJOR_GATE_UP=True+GLUON_EXPERT_MAJOR_PREFETCH='first_wave'"
timeout 330 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 7,8,12,16 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 8 \
    --gluon-tiles "$E" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g24b.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
