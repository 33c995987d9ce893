#!/usr/bin/env bash
# Issue #16, thirty-fourth session (2026-12-06), call 4 (a try for it got no machine and the next may bring an
# H200): on an H200 the goal table (any_gpu_session34.sh's H200 branch), else any_gpu_session34_down_wait.sh.
# Device, repo root, carry=[".vendor"].
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
    exec bash benchmarks/device_calls/any_gpu_session34.sh
fi
exec bash benchmarks/device_calls/any_gpu_session34_down_wait.sh
