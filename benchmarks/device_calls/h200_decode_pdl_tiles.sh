#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), sixth device call: benchmarks/probe_decode_pdl_tiles.py
# (a gate_up tile faster alone but not in the layer: with and without PDL). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/pdltiles; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/probe_decode_pdl_tiles.py --out $R > $R/probe.log 2>&1
tar czf $OUT/pdltiles.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
grep "^|" $R/probe.log
