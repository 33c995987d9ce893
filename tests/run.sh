#!/usr/bin/env bash
# The test command (README and .ci/run), in a fresh virtual environment:
#   1. lint: ruff (the whole tree) and mypy (jitguard/), configured in pyproject.toml
#   2. the full suite on the newest Triton on PyPI (the kernels' maths cases skip on a CPU: step 3 runs them)
#   3. the kernels' maths (marker `interpreter`) under TRITON_INTERPRET=1 on the CPU, every case shown
#   4. every tool test (tests/tool/) on Triton 3.6 (the GPU machine's) and 3.2 (before knobs), and the
#      kernels' real sm_90 compiles on 3.2
#   5. packaging, once: the wheel in a venv with neither torch nor Triton, the pre-commit hooks
# The older Tritons' installs and the packaging step wait mostly on the network and the disk: they
# start early and run beside the CPU-bound steps; each is waited for where its result is needed, and
# its output is shown then (a failure there fails the run as before).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${JITGUARD_TEST_VENV:-.venv}
PY="$VENV/bin/python"
# ruff and mypy report nothing: a new finding fails CI
LINT_FATAL=1
PYTEST=("$PY" -m pytest -q -p no:cacheprovider)

if [ ! -x "$PY" ]; then
  python3 -m venv "$VENV"
fi
"$PY" -m pip install -q --disable-pip-version-check torch==2.13.0
"$PY" -m pip install -q --disable-pip-version-check -e '.[test,lint]'
"$PY" -c "import triton, torch; print(f'newest: triton {triton.__version__}, torch {torch.__version__}')"

BACKGROUND=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$BACKGROUND"' EXIT
declare -A INSTALL_PID
for version in 3.6.0 3.2.0; do
  target=".ci/triton-${version%.0}"
  if [ ! -d "$target/triton" ]; then
    "$PY" -m pip install -q --disable-pip-version-check --no-deps --target "$target" "triton==$version" \
      > "$BACKGROUND/triton-$version.log" 2>&1 &
    INSTALL_PID[$version]=$!
  fi
done
# tests/tool/test_prometheus_alert.py scrapes with a real Prometheus (Debian package `prometheus`) and
# tests/tool/test_bundle_remote.py starts a real `redis-server` (Debian package `redis-server`): installed
# here when absent and apt-get can; without them those tests skip, saying so.
PROMETHEUS_PID=
if { ! command -v prometheus || ! command -v redis-server; } >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ]; then
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q prometheus redis-server) \
    > "$BACKGROUND/prometheus.log" 2>&1 &
  PROMETHEUS_PID=$!
fi
# Its own --basetemp: pytest prunes old numbered temp folders when later sessions start.
"${PYTEST[@]}" -s -m packaging --basetemp "$BACKGROUND/packaging-tmp" tests/tool/test_packaging.py \
  > "$BACKGROUND/packaging.log" 2>&1 &
PACKAGING_PID=$!

# Wait for background job $1 (pid $2); print its log $3; fail the run if it failed.
finish_background() {
  local rc=0
  wait "$2" || rc=$?
  cat "$3"
  if [ "$rc" -ne 0 ]; then
    echo "$1 failed (exit $rc)"
    exit "$rc"
  fi
}

echo "== lint: ruff check . and mypy"
ruff_rc=0; mypy_rc=0
"$VENV/bin/ruff" check --statistics . || ruff_rc=$?
"$VENV/bin/mypy" || mypy_rc=$?
if [ "$ruff_rc" -ne 0 ] || [ "$mypy_rc" -ne 0 ]; then
  echo "lint: ruff exit $ruff_rc, mypy exit $mypy_rc (LINT_FATAL=$LINT_FATAL in tests/run.sh)"
  if [ "$LINT_FATAL" = 1 ]; then exit 1; fi
fi

if [ -n "$PROMETHEUS_PID" ] && ! wait "$PROMETHEUS_PID"; then
  echo "prometheus could not be installed (see below); tests/tool/test_prometheus_alert.py skips"
  tail -5 "$BACKGROUND/prometheus.log"
fi
echo "== full suite, newest Triton (maths cases skip without a GPU: step 3 runs them)"
"${PYTEST[@]}" -n 2 -m "not packaging" tests

echo "== kernel maths under TRITON_INTERPRET=1 (CPU), newest Triton"
TRITON_INTERPRET=1 "${PYTEST[@]}" -n 2 -m interpreter tests/kernels

for version in 3.6.0 3.2.0; do
  target=".ci/triton-${version%.0}"
  if [ -n "${INSTALL_PID[$version]:-}" ]; then
    finish_background "installing triton==$version into $target" "${INSTALL_PID[$version]}" \
      "$BACKGROUND/triton-$version.log"
  fi
  echo "== tool tests, Triton $version"
  PYTHONPATH="$PWD/$target" "${PYTEST[@]}" -n 2 -m "not packaging" tests/tool
done
echo "== the kernels' real sm_90 compiles, Triton 3.2 (no tl.topk, tl.dot from 16 tokens)"
PYTHONPATH="$PWD/.ci/triton-3.2" "${PYTEST[@]}" -n 2 -m "not packaging" tests/kernels -k "real and compile"

echo "== packaging (once: it installs jitguard without Triton): wheel, base install, pre-commit hooks"
echo "(started before the lint step, beside the others)"
finish_background "the packaging step" "$PACKAGING_PID" "$BACKGROUND/packaging.log"
