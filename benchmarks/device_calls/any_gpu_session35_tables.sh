#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 6, whichever GPU comes. Device, repo root, carry=[".vendor"].
# On an H200: call 5's confirmation (h200_session35_confirm.sh's probes: the tables from call 4's tuner beside the
# previous ones, Qwen3-30B-FP8 1, 2, 5, 7, 12, DeepSeek-V3-TP2 3, 7), then the tuner at the other Gluon counts.
# Prediction: every changed point faster by 0.4-1 us (Qwen3 1 by about 1 us), DeepSeek 7 by 3-5 us.
# On an H100: call 5's H100 tuner proposals in GLUON_TILES_ON_GPU (Qwen3-30B-FP8 grouped 14 32x8/128x3, 19
# 32x8/128x4) beside the previous H100 table, then the tuner at the H100's other goal counts.
# Prediction: 19 faster by 2-3 us, 14 by 0.3-0.8.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/g35f; rm -rf $R; mkdir -p $R
P="python3 benchmarks/probe_decode_gluon_layer.py $V"
T="python3 benchmarks/tune_decode_gluon_tiles.py"
if [[ "$GPU" == *H200* ]]; then
    PREV="[previous tables]auto:default+GLUON_TILES_AT={'small':{'pairs':{1:((32,7),(128,6)),2:((32,6),(128,6)),4:((64,3),(128,3)),5:((64,3),(128,4))},'grouped':{3:((32,6),(128,4)),7:((32,4),(64,3)),8:((32,4),(128,3)),9:((32,4),(64,3)),10:((32,6),(64,4)),11:((32,8),(64,4)),12:((32,6),(64,4)),17:((32,4),(64,4)),18:((32,4),(64,4)),19:((32,4),(64,4)),20:((32,4),(64,4)),21:((32,6),(128,4)),22:((32,6),(128,4)),23:((32,6),(128,4)),24:((32,6),(128,4)),25:((32,6),(128,4)),26:((32,6),(128,4)),27:((32,6),(128,4)),28:((32,6),(128,4)),29:((32,6),(128,4)),30:((32,6),(128,4)),31:((32,6),(128,4)),32:((32,6),(128,4)),33:((32,6),(128,4)),34:((32,6),(128,4)),35:((32,6),(128,4)),36:((32,6),(128,4)),37:((32,6),(128,4)),38:((32,6),(128,4)),39:((32,6),(128,4)),40:((32,6),(128,4))}},'large':{'pairs':{1:((32,8),(128,3)),2:((64,4),(128,3))},'grouped':{3:((32,8),(64,3)),5:((32,8),(64,3)),6:((32,8),(64,3)),8:((32,8),(64,3)),10:((32,6),(128,4)),12:((32,8),(64,4)),13:((32,8),(64,4))}}}+GLUON_FP8_TOKENS={'small':{'pairs':(1,2,4,5),'grouped':(3,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64)},'large':{'pairs':(1,2),'grouped':(3,5,6,8,10,12,13)}}"
    timeout 150 $P --cases qwen3-30b-fp8-block --ms 1,2,5,7,12 --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
    timeout 120 $P --cases deepseek-v3-tp2-fp8-block --ms 3,7 --gluon-tiles "$PREV" --out $R/d > $R/d.log 2>&1
    timeout 230 $T --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block --ms 1,4,8,10,11,13,14,16,20,24,32,48,64 \
        --minutes 3 --out $R/t > $R/t.log 2>&1
else
    PREV="[previous H100 tiles]auto:default+GLUON_TILES_ON_GPU={'NVIDIA H100 80GB HBM3':{'small':{'pairs':{1:((32,8),(128,6))},'grouped':{7:((32,6),(128,4)),8:((32,8),(64,3)),9:((32,6),(64,3)),5:((32,6),(128,4)),6:((32,6),(128,4)),10:((32,6),(128,4)),11:((32,6),(128,4)),12:((32,6),(128,4)),18:((32,6),(128,4)),13:((32,8),(128,4)),17:((32,8),(128,4)),20:((32,8),(128,4)),48:((32,8),(128,4)),64:((32,8),(64,3))}}}}"
    timeout 120 $P --cases qwen3-30b-fp8-block --ms 14,19 --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
    timeout 230 $T --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block --ms 2,3,4,5,8,12,16,32,64 \
        --minutes 3 --out $R/t > $R/t.log 2>&1
fi
tar czf $OUT/g35f.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/[qd].log | grep -v "^|---\|^| case | M |" | awk -F'|' '{print $2"|"$3"|"$4"|"$6"|"$(NF-2)}'
grep "^|" $R/t.log | grep -v "^|---"; grep "beat the shipped" $R/t.log
