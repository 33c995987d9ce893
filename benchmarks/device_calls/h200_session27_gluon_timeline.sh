#!/usr/bin/env bash
# Issue #16, twenty-seventh session (2026-12-04), call 1: where a decode layer on the Gluon GEMMs spends its time,
# from device-side stamps (the Gluon kernel's STAMPS, new this session; probe_decode_timeline.py). The twenty-third
# session read the chain's timeline only. Points: Qwen3-30B-FP8 pairs 1, 2 and grouped 8, 16, 64; DeepSeek-V3-TP2
# pairs 1; Qwen3-30B-bf16 pairs 1 on Gluon (GLUON_BF16_GEMMS "always") and on tl (shipped).
# Prediction, written before the call: at one token the layer's ~18 us (Qwen3-FP8) splits into about 3 us before
# gate_up's first wait returns (marker and x launch), gate_up's stream to its last end (~9 us), a junction of
# 0.5-1.5 us to down's first wait, down's stream (~3.5 us) and 2-3 us after down's last end (reduce and marker);
# i.e. 5-7 us of the layer is not weight streaming, which is what a one-launch layer could take back.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g27a; rm -rf $R; mkdir -p $R
P="python3 benchmarks/probe_decode_timeline.py"
timeout 150 $P --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block --ms 1,2 --paths pairs --out $R/p > $R/p.log 2>&1
timeout 150 $P --cases qwen3-30b-fp8-block --ms 8,16,64 --paths grouped --out $R/g > $R/g.log 2>&1
timeout 100 $P --cases qwen3-30b-bf16 --ms 1 --paths pairs --switch GLUON_BF16_GEMMS="'always'" --out $R/b > $R/b.log 2>&1
timeout 100 $P --cases qwen3-30b-bf16 --ms 1 --paths pairs --out $R/t > $R/t.log 2>&1
tar czf $OUT/g27a.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
for f in p g b t; do grep -h "^|" $R/$f.log; done
