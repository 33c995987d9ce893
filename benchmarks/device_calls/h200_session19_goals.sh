#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 4: the GPU tests of the session's two changes (routers apart
# in place of the route launch's counter path; the grouped path on Gluon at 9-16 tokens, small experts), then
# the goal table on the committed tree: the shipped FP8 block-scaled layer (twice: "shipped" and the same with
# a switch set to its shipped value, a noise check) against vLLM's two GEMMs alone, side by side,
# DeepSeek-V3-TP2 and Qwen3-30B-FP8 at every M the goals name and the path boundaries between.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g19; rm -rf $R; mkdir -p $R
P="python3 -m pytest -q -p no:cacheprovider"
timeout 120 $P tests/kernels/test_moe_decode_gluon.py -k "13 or measured or auto or shipped or routers" > $R/gpu_gluon.log 2>&1
echo "pytest gluon: $(tail -1 $R/gpu_gluon.log)"; grep -E "^(FAILED|ERROR)" $R/gpu_gluon.log | head
S="auto:default+FIRST_LAUNCH_PDL=True"
timeout 190 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,3,4,5,6,8,16,32,64 \
    --gluon-tiles "$S" --out $R/d > $R/d.log 2>&1
timeout 190 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,3,4,5,6,8,9,12,16,32,64 \
    --gluon-tiles "$S" --out $R/q > $R/q.log 2>&1
tar czf $OUT/g19.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/d.log $R/q.log | head -30
grep -h "^|" $R/d.log $R/q.log | cut -d"|" -f1-4,6,7,10,11
