#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), fourth device call: the decode tiles at M = 1 and 2 with
# deeper pipelines than any sweep tried (gate_up 32/64-row tiles up to 12 stages: the 2026-12-01
# ncu read 69% DRAM at one token, 87% at four, where each SM holds about twice the bytes in
# flight; the down GEMM's 8-step K loop up to 8 stages, i.e. all of it in flight at once).
# Device, repo root, carry .vendor. Results in one tarball ($OUT holds at most 8 files).
source benchmarks/h200_setup.sh
R=/tmp/m1tiles; rm -rf $R; mkdir -p $R
timeout 400 python3 benchmarks/tune_moe_decode.py $V --skip-variants --precompile 14 --time-budget 300 \
    --tile-cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block --tile-ms 1,2 \
    --gate-up-candidates 32,64:6,8,10,12:2,4 --down-candidates 32,64,128:3,4,6,8:4 --out $R > $R/tune.log 2>&1
tar czf $OUT/m1tiles.tgz -C $R .
grep -E "^# " $R/tune.log | grep -v precompile | tail -5
grep -E "^\|" $R/tune.log | awk '!seen[$0]++' | cut -c1-400
python3 - $R/tune_moe_decode.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"stage"' in l]
for case in sorted({r["case"] for r in rows}):
    for M in sorted({r["M"] for r in rows if r["case"] == case}):
        for stage in ("gate_up", "down"):
            sel = sorted(((r["us"], r["tile"]) for r in rows if r["case"] == case and r["M"] == M and r["stage"] == stage),
                         key=lambda ut: ut[0])
            best = "; ".join(f"{us:.1f} bm{t['block_m']} bn{t['block_n']} w{t['num_warps']} s{t['num_stages']}"
                             f"{' swap' if t['swap_ab'] else ''}" for us, t in sel[:4])
            print(f"{case} M={M} {stage} alone, fastest: {best}")
PY
