#!/usr/bin/env bash
# Record only: this call (twentieth session, 2026-12-03) measured token runs slower at every run length; the switch
# (token_run, --token-runs) was removed after it, so this script no longer runs on later trees.
# Issue #16, written in the nineteenth session (2026-12-03) for the next device call (not yet run): the inverse-RoPE
# kernel in vLLM's layout with tiles of one head's run of 2, 4 or 8 consecutive tokens (launch_inv_rope_fp8's
# token_run; inv_rope._MN_MAJOR_TOKEN_RUN, prepared at 1), so each MN-major scale column is one store of contiguous
# words. Call 9 measured row scales instead of MN-major ones 30.08 -> 28.28 us at T = 4096; predicted: runs of 4
# take T = 4096 to about 28.5-29 us (86-87% of copy), level below T = 256. GPU tests first. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/tr; rm -rf $R; mkdir -p $R
timeout 120 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
timeout 150 python3 benchmarks/probe_inv_rope_layouts.py --token-runs --tokens 1,16,256,1024,4096,8192,16384 --out $R \
    > $R/probe.log 2>&1
tar czf $OUT/tr.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/probe.log | head -30
tail -10 $R/probe.log
