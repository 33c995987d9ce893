# Sourced by the benchmarks/h200_*.sh device scripts, in the repository root on the device: this
# tree installed editable without a network, unbuffered output, a Triton cache of its own, and $V
# naming vLLM 0.33.0's kernel file and configs carried in the git-ignored .vendor/.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || tail -5 /tmp/pip.log
export TRITON_CACHE_DIR=/tmp/triton-cache
V="--vllm-file .vendor/vllm_fused_moe.py --vllm-configs .vendor/configs"
