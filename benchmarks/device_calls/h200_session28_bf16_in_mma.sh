#!/usr/bin/env bash
# Issue #16, twenty-eighth session (2026-12-05, written with no device lent; for a later session): the bf16 Gluon GEMMs
# accumulating in the MMA (moe_decode.GLUON_BF16_ACCUMULATE_IN_MMA: each step's wgmma onto the accumulator in flight,
# the step before waited for once the next is issued) against the shipped products-and-folds loop, and the GPU tests of
# the switch (20 replay cases; h200_session27_shipped.sh runs the rest of the file). Why: the twenty-seventh session's
# timeline showed the Gluon bf16 down at Qwen3-30B M = 1 streaming its last 7 of 12 K steps at about 2 TB/s after its
# wait. Prediction, written before the call: the Gluon bf16 layer 0.5-1.5 us faster at M = 1-4 with the switch, enough
# at M = 1 for the Gluon pairs path to pass tl's (24.8-25.1 us) by 0.3-1 us; outputs within 1e-2 of tl's (not bit-equal:
# the MMA adds in another order). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/g28b; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py -k "accumulating" -p no:cacheprovider \
    > $R/tests.log 2>&1
tail -3 $R/tests.log
G="[products]pairs:default+GLUON_BF16_GEMMS='always',[in the MMA]pairs:default+GLUON_BF16_GEMMS='always'"
G="$G+GLUON_BF16_ACCUMULATE_IN_MMA=True,[in the MMA]auto:default+GLUON_BF16_ACCUMULATE_IN_MMA=True"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py --cases qwen3-30b-bf16 --ms 1,2,3,4,5 \
    --gluon-tiles "$G" --out $R/b > $R/b.log 2>&1
tar czf $OUT/g28b.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/b.log | head -30
grep -h "FAILED\|Error" $R/tests.log | head -10
grep -h "^|" $R/b.log | cut -d"|" -f2-8
