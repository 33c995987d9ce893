#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), calls 1-2: the Gluon down GEMM on a persistent grid
# (moe_decode.GLUON_PERSISTENT_DOWN = programs an SM; moe_decode_down_persistent_gluon_kernel): each program runs
# work items p, p + G, ... through one ring of shared-memory stages that runs on across its items. Down has 6 K
# steps a tile at Qwen3-30B (8 at DeepSeek-V3-TP2), so a one-item program's ring fills and drains as often as it
# streams; down alone reads 3.3-3.4 TB/s at Qwen3-30B-FP8 8-16 tokens where gate_up (16 steps a tile) reads 3.9.
# Prediction, written before the call: if the per-item fill and drain is what holds down back, down alone at 4-8
# programs an SM drops from about 24 to 21-22 us at Qwen3 M = 8 and from 37 to 33-34 at M = 16, the layer 1.5-3.5
# us faster there (Qwen3 8 then ahead of vLLM's GEMMs alone, 16 still behind); at 2 an SM, slower (fewer copies in
# flight). If down is bound elsewhere (its tail, the top-k sum, the copies' issue rate), level or slower: then a
# one-launch layer built on persistent streams has no footing. GPU tests first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25a; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "persistent or shipped-tiles" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
E="[p2]auto:default+GLUON_PERSISTENT_DOWN=2,[p4]auto:default+GLUON_PERSISTENT_DOWN=4"
E="$E,[p8]auto:default+GLUON_PERSISTENT_DOWN=8"
timeout 240 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 8,12,16 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 2,8 \
    --gluon-tiles "$E" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g25a.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
