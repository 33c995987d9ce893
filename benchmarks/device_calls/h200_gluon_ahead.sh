#!/usr/bin/env bash
# Issue #16, seventeenth session (2026-12-03), call 3: the Gluon down GEMM's first K steps of weights copied before
# it waits for gate_up (GLUON_DOWN_WEIGHTS_BEFORE_WAIT; gate_up then lets down start only after its own wait), and
# the activation rows of padding no longer copied (zero-filled), the grouped path on 8-row token tiles
# (GLUON_BLOCK_M; call 2: its 16-row tiles 1.2-1.5x slower), at call 2's best tiles, whole layer beside the shipped
# path and vLLM's GEMMs alone; and on the pairs path each GEMM program routing its own token
# (GLUON_PAIRS_ROUTE_IN_GEMMS: both GEMMs then copy their first weights before they wait).
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g3; rm -rf $R; mkdir -p $R/p
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 300 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,4,8 --gluon-tiles pairs:32x6/128x3,pairs:32x6/128x3+ahead,pairs:32x6/128x3+route,grouped:32x6/64x3,grouped:32x6/64x3+ahead \
    --out $R/p > $R/p.log 2>&1
tar czf $OUT/g3.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
