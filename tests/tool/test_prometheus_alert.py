"""jitguard's compile counter scraped by a real Prometheus server, and the example alerting rule.

The multi-node example's metrics server runs under `jitguard run --offline`, warms a kernel up and
serves /metrics on loopback; a `prometheus` (the Debian package; tests/run.sh installs it) scrapes it
every second and evaluates examples/multinode/alerts.yml. The rule stays inactive after the warm-up
and after a request that reuses a variant, and fires on the request that compiles during serving.
Where no prometheus can start here, the test is skipped with one line saying why.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jitguard.integrations.prometheus import OTHER_KERNELS, count_compiles

prometheus_client = pytest.importorskip("prometheus_client")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "multinode"
RULE = "TritonCompileDuringServing"


class Event:
    """What the counter reads of a compile event."""

    def __init__(self, label: str, phase: str = "serving", arrived: str | None = "cold") -> None:
        self.label, self.phase, self.arrived, self.role, self.rank = label, phase, arrived, "worker", 3


def test_kernel_labels_are_capped_and_later_kernels_count_as_other() -> None:
    registry = prometheus_client.CollectorRegistry()
    counting = count_compiles(registry=registry, max_kernels=2)
    assert counting is not None
    for name in ("gemm", "rope", "gemm", "softmax", "norm", "rope"):
        counting(Event(name, arrived=None))
    counts = {s.labels["kernel"]: s.value for metric in registry.collect() for s in metric.samples
              if s.name == "jitguard_triton_compiles_total"}
    assert counts == {"gemm": 2.0, "rope": 2.0, OTHER_KERNELS: 2.0}
    sample = registry.get_sample_value("jitguard_triton_compiles_total", {
        "kernel": "gemm", "phase": "serving", "arrived": "unknown", "role": "worker", "rank": "3"})
    assert sample == 2.0
    assert count_compiles(registry=registry) is counting  # a second call registers nothing new


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/{path}", timeout=5) as response:
        return json.load(response)["data"]


def wait_for(what: str, check: Callable[[], Any], timeout: float = 40.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def read_line_until(stream: Any, wanted: str) -> None:
    for line in stream:
        if line.strip() == wanted:
            return
    raise AssertionError(f"the metrics server ended before printing {wanted!r}")


@pytest.fixture
def metrics_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, int]]:
    port = free_port()
    errors = (tmp_path / "server.err").open("w")
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton-cache"), TRITON_DEFAULT_FP_FUSION="1")
    server = subprocess.Popen([sys.executable, "-m", "jitguard", "run", "--offline", "--dir", str(tmp_path / "logs"),
                               "--", sys.executable, str(EXAMPLE / "metrics_server.py"), "--port", str(port)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    try:
        assert server.stdout is not None
        read_line_until(server.stdout, "serving")
        yield server, port
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=30)
        errors.close()


@pytest.fixture
def prometheus(tmp_path: Path, metrics_server: tuple[subprocess.Popen, int]) -> Iterator[int]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("no prometheus server here (apt-get install prometheus; tests/run.sh installs it)")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""\
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: ["{EXAMPLE / 'alerts.yml'}"]
scrape_configs:
  - job_name: jitguard
    static_configs: [{{targets: ["127.0.0.1:{metrics_server[1]}"]}}]
""")
    server = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        started = wait_for_or_none(lambda: api(port, "status/buildinfo"), server)
        if started is None:
            server.kill()
            reason = (server.communicate(timeout=10)[1] or "").strip().splitlines()
            pytest.skip(f"prometheus could not start here: {reason[-1] if reason else 'no reason given'}")
        yield port
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=30)


def wait_for_or_none(check: Callable[[], Any], process: subprocess.Popen, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            return check()
        except OSError:
            time.sleep(0.3)
    return None


def utc_seconds(stamp: str) -> float:
    """Seconds since the epoch of one of Prometheus's RFC 3339 UTC times ("2026-12-07T11:20:01.123456789Z")."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    moment = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp() + (float("0." + fraction) if fraction else 0.0)


def rule_state(port: int) -> tuple[str, float, list[dict]]:
    """The alert rule's state, the time of its group's last evaluation, and its alerts."""
    (group,) = [g for g in api(port, "rules")["groups"] if g["name"] == "jitguard"]
    (rule,) = [r for r in group["rules"] if r["name"] == RULE]
    return rule["state"], utc_seconds(group["lastEvaluation"]), rule.get("alerts", [])


def settle(port: int) -> tuple[str, list[dict]]:
    """The rule's state once a scrape that started after now has been evaluated."""
    since = time.time()

    def scraped() -> float | None:
        # When the newest scrape ended: an evaluation that starts after a scrape started but before its
        # samples were stored still sees the previous ones.
        ends = [(utc_seconds(t["lastScrape"]), utc_seconds(t["lastScrape"]) + float(t["lastScrapeDuration"]))
                for t in api(port, "targets")["activeTargets"] if t["health"] == "up"]
        started, ended = max(ends) if ends else (0.0, 0.0)
        return ended if started > since else None

    scrape_time = wait_for("a scrape", scraped)

    def evaluated() -> tuple[str, list[dict]] | None:
        state, when, alerts = rule_state(port)
        return (state, alerts) if when > scrape_time else None

    return wait_for("an evaluation of the scrape", evaluated)


def served_compiles(port: int, phase: str) -> float:
    result = api(port, f"query?query=sum(jitguard_triton_compiles_total{{phase=%22{phase}%22}})")["result"]
    return float(result[0]["value"][1]) if result else 0.0


@pytest.mark.slow
def test_the_alert_is_quiet_after_warm_up_and_fires_on_a_compile_during_serving(
        tmp_path: Path, metrics_server: tuple[subprocess.Popen, int], prometheus: int) -> None:
    server, _ = metrics_server
    assert server.stdin is not None and server.stdout is not None
    state, alerts = settle(prometheus)
    # Warm-up compiled 16 and 17 tokens: two compiles scraped, none during serving, the rule inactive.
    assert (served_compiles(prometheus, "warmup"), served_compiles(prometheus, "serving")) == (2.0, 0.0)
    assert (state, alerts) == ("inactive", [])

    server.stdin.write("32\n")  # 32 tokens reuse 16's variant: no compile
    server.stdin.flush()
    read_line_until(server.stdout, "served 32 token(s)")
    assert settle(prometheus) == ("inactive", [])

    server.stdin.write("1\n")  # one token is a new specialization: a compile during serving
    server.stdin.flush()
    read_line_until(server.stdout, "served 1 token(s)")
    state, alerts = settle(prometheus)
    assert state == "firing"
    (alert,) = alerts
    assert alert["state"] == "firing"
    assert {key: alert["labels"][key] for key in ("alertname", "kernel", "arrived")} == {
        "alertname": RULE, "kernel": "sample_rows", "arrived": "cold"}
    assert float(alert["value"]) == 1.0
    server.stdin.write("quit\n")
    server.stdin.flush()
    assert server.wait(timeout=60) == 0, (tmp_path / "server.err").read_text()[-3000:]
