"""A fleet through Triton's own remote cache: a bundle pushed into a real redis-server, then a process with
an empty local cache and Triton's RemoteCacheManager loads every planned variant from it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jitguard import triton_cache, triton_compat
from jitguard.runtime.bundle_remote import push_bundle
from tests.tool.test_bundle import REPO, built  # noqa: F401 - the module fixture: (plan, bundle)

redis = pytest.importorskip("redis", reason="the redis client (pip install redis) is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def redis_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (Debian package redis-server; tests/run.sh installs it)")
    port = _free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no", "--dir", str(tmp_path_factory.mktemp("redis"))],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    else:
        process.kill()
        pytest.skip(f"redis-server did not start on port {port}")
    try:
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


LOADER = textwrap.dedent('''
    import json, sys
    import jitguard
    from tests.tool.test_bundle import _traffic
    with jitguard.offline(compile=True):
        with jitguard.watch() as rec:
            jitguard.warmup(sys.argv[1], quiet=True)
            warm = len(rec.events)
            _traffic()
    print(json.dumps({"arrived": [e.arrived for e in rec.events], "after_warmup": len(rec.events) - warm}))
''')


def test_a_cold_process_loads_the_pushed_bundle_from_redis(built: tuple[Path, Path], tmp_path: Path,  # noqa: F811
                                                           redis_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_REDIS_HOST", "127.0.0.1")
    monkeypatch.setenv("TRITON_REDIS_PORT", str(redis_port))
    plan, bundle = built
    pushed = push_bundle(bundle)
    assert pushed.skipped == [] and len(pushed.installed) == len(json.loads(_manifest_text(bundle))["entries"])
    client = redis.Redis(host="127.0.0.1", port=redis_port)
    hits_before = int(client.info("stats")["keyspace_hits"])
    env = dict(os.environ, **triton_cache.remote_cache_env(), TRITON_CACHE_DIR=str(tmp_path / "empty-cache"),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", LOADER, str(plan)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    # Triton 3.2 and 3.3 have no compilation listener: a remote read and a compile look alike there.
    expected = "remote" if triton_compat.HAS_KNOBS else None
    assert outcome == {"arrived": [expected] * 4, "after_warmup": 0}, done.stderr
    assert int(client.info("stats")["keyspace_hits"]) > hits_before  # the kernels came out of redis


def _manifest_text(bundle: Path) -> str:
    import tarfile
    with tarfile.open(bundle) as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        return handle.read().decode()
