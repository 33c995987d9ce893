#!/usr/bin/env bash
# The test command (README and .ci/run): a fresh virtual environment, the full suite on the newest
# Triton on PyPI, then every tool test (tests/tool/) on Triton 3.6 (the GPU machine's) and 3.2 (before knobs).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${JITGUARD_TEST_VENV:-.venv}
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
  python3 -m venv "$VENV"
fi
"$PY" -m pip install -q --disable-pip-version-check torch==2.13.0
"$PY" -m pip install -q --disable-pip-version-check -e '.[test]'
"$PY" -c "import triton, torch; print(f'newest: triton {triton.__version__}, torch {torch.__version__}')"

echo "== full suite, newest Triton"
"$PY" -m pytest -q -n 2 -p no:cacheprovider tests

for version in 3.6.0 3.2.0; do
  target=".ci/triton-${version%.0}"
  if [ ! -d "$target/triton" ]; then
    "$PY" -m pip install -q --disable-pip-version-check --no-deps --target "$target" "triton==$version"
  fi
  echo "== tool tests, Triton $version"
  PYTHONPATH="$PWD/$target" "$PY" -m pytest -q -n 2 -p no:cacheprovider tests/tool
done
