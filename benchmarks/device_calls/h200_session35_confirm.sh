#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 5, H200: call 4's tuner proposals, written into GLUON_TILES_AT and
# GLUON_FP8_TOKENS (Qwen3-30B-FP8 pairs 1 and 2 32x6/128x4, 5 64x6/128x4, grouped 7 32x8/128x4, 12 32x6/64x3;
# DeepSeek-V3-TP2 grouped 3 32x8/128x3, 7 on Gluon 32x8/128x4), confirmed beside the previous tables in one run;
# then the tuner at the Gluon token counts call 4 did not tune.
# Prediction: every changed point faster by 0.4-1 us (Qwen3 1 by about 1 us), DeepSeek 7 by 3-5 us; the tuner
# proposes changes at two or three more counts. Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g35e; rm -rf $R; mkdir -p $R
PREV="[previous tables]auto:default+GLUON_TILES_AT={'small':{'pairs':{1:((32,7),(128,6)),2:((32,6),(128,6)),4:((64,3),(128,3)),5:((64,3),(128,4))},'grouped':{3:((32,6),(128,4)),7:((32,4),(64,3)),8:((32,4),(128,3)),9:((32,4),(64,3)),10:((32,6),(64,4)),11:((32,8),(64,4)),12:((32,6),(64,4)),17:((32,4),(64,4)),18:((32,4),(64,4)),19:((32,4),(64,4)),20:((32,4),(64,4)),21:((32,6),(128,4)),22:((32,6),(128,4)),23:((32,6),(128,4)),24:((32,6),(128,4)),25:((32,6),(128,4)),26:((32,6),(128,4)),27:((32,6),(128,4)),28:((32,6),(128,4)),29:((32,6),(128,4)),30:((32,6),(128,4)),31:((32,6),(128,4)),32:((32,6),(128,4)),33:((32,6),(128,4)),34:((32,6),(128,4)),35:((32,6),(128,4)),36:((32,6),(128,4)),37:((32,6),(128,4)),38:((32,6),(128,4)),39:((32,6),(128,4)),40:((32,6),(128,4))}},'large':{'pairs':{1:((32,8),(128,3)),2:((64,4),(128,3))},'grouped':{3:((32,8),(64,3)),5:((32,8),(64,3)),6:((32,8),(64,3)),8:((32,8),(64,3)),10:((32,6),(128,4)),12:((32,8),(64,4)),13:((32,8),(64,4))}}}+GLUON_FP8_TOKENS={'small':{'pairs':(1,2,4,5),'grouped':(3,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64)},'large':{'pairs':(1,2),'grouped':(3,5,6,8,10,12,13)}}"
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,5,7,12 \
    --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 3,7 \
    --gluon-tiles "$PREV" --out $R/d > $R/d.log 2>&1
timeout 300 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,6,9,10,11,13,14,15,17,18,19,20,24 --minutes 4 --out $R/t > $R/t.log 2>&1
tar czf $OUT/g35e.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/q.log $R/d.log | grep -v "^|---" | cut -d'|' -f1-5,8-
grep "^|" $R/t.log; grep "beat the shipped" $R/t.log
