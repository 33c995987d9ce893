"""jitguard's pytest plugin (loaded by the `pytest11` entry point): fail a test that adds a recompile.

    @pytest.mark.no_recompiles(warmup=1)
    def test_decode_sizes(jitguard_backend):
        x = torch.randn(4096, device=jitguard_backend.device)
        for num_tokens in (16, 17, 32):
            my_op(x, num_tokens)

- marker `no_recompiles(warmup=1, kernels=None)`: the test body runs inside
  `jitguard.no_recompiles(warmup, kernels)`: a kernel that compiles a new variant after its first
  `warmup` calls in the body fails the test with the list of new variants, their causes by
  argument name, call sites and the fix. Marked tests get the `jitguard_backend` fixture.
- fixture `jitguard_backend`: the real GPU when `torch.cuda.is_available()`, else the compile-only
  backend `jitguard.offline()`; `.device` is the torch device to put tensors on.
  `--jitguard-backend=offline-keys` computes keys only (fast), `=cuda` / `=offline` force one.
- fixture `jitguard`: the `Recorder` of every compile during the test (`.events`, `.variants(name)`).
- `--jitguard`: a terminal summary of compiles per test and per kernel (works with pytest-xdist).
- `--jitguard-strict`: every test runs as if marked `no_recompiles()`.

Verdicts do not depend on test order or on xdist: a guarded test body starts with empty
in-memory caches for the kernels it calls (see `jitguard.no_recompiles`, `isolate`).
Importing this module imports neither Triton nor torch.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

MARKER = "no_recompiles"
_MARKER_ARGS = ("warmup", "kernels")
_PROPERTY = "jitguard"  # name of the user property that carries a test's compiles to the controller
BACKENDS = ("auto", "cuda", "offline", "offline-keys")


@dataclass(frozen=True)
class Backend:
    """What `jitguard_backend` picked: `name` "cuda" or "offline", `device` the torch device for
    tensors ("cuda" or "cpu"), `compiles` False when only keys are computed (offline-keys)."""

    name: str
    device: str
    compiles: bool = True


# --- options, marker, configuration ---------------------------------------------------------------

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jitguard", "Triton recompilation (jitguard)")
    group.addoption("--jitguard", action="store_true", default=False,
                    help="print a summary of Triton compiles per test and per kernel")
    group.addoption("--jitguard-strict", action="store_true", default=False,
                    help="fail any test whose kernels compile a new variant after their first call "
                         "(as if every test were marked no_recompiles)")
    group.addoption("--jitguard-backend", choices=BACKENDS, default=None,
                    help="backend of the jitguard_backend fixture: auto (GPU if CUDA is available, else offline), "
                         "cuda, offline (compile for sm_90 without a GPU), offline-keys (keys only, no compiler)")
    # the same settings for pytest.ini / [tool.pytest.ini_options]; a command-line option wins
    parser.addini("jitguard", type="bool", default=False, help="as --jitguard: print a summary of Triton compiles")
    parser.addini("jitguard_strict", type="bool", default=False,
                  help="as --jitguard-strict: every test runs as if marked no_recompiles")
    parser.addini("jitguard_backend", default="auto", help=f"as --jitguard-backend: one of {', '.join(BACKENDS)}")


def setting(config: pytest.Config, name: str) -> Any:
    """The plugin setting `name`: its command-line option when given, else the ini option of the same name."""
    value = config.getoption(name)
    if value is None or value is False:
        value = config.getini(name)
    if name == "jitguard_backend" and value not in BACKENDS:
        raise pytest.UsageError(f"jitguard: jitguard_backend = {value} in "
                                f"{config.inipath.name if config.inipath else 'the ini file'}; "
                                f"expected one of {', '.join(BACKENDS)}")
    return value


def _spelling(config: pytest.Config, name: str) -> str:
    """How the user turned the setting `name` on: `--jitguard-strict` or `jitguard_strict = true` (ini)."""
    if config.getoption(name):
        return f"--{name.replace('_', '-')}"
    return f"{name} = true in {config.inipath.name if config.inipath else 'the ini file'}"


def _require_triton(what: str, torch_too: bool = False) -> str | None:
    """The one line saying `what` needs Triton (and torch) from jitguard[pytest], or None when they are installed."""
    from jitguard.extras import missing_extra_message, missing_modules
    return missing_extra_message(what, "pytest", missing_modules("pytest" if torch_too else "monitor"))


def pytest_configure(config: pytest.Config) -> None:
    setting(config, "jitguard_backend")  # a bad ini value is one usage error at start, not a failure in each test
    wanted = [_spelling(config, name) for name in ("jitguard", "jitguard_strict") if setting(config, name)]
    missing = _require_triton(f"jitguard's pytest plugin ({', '.join(wanted)})") if wanted else None
    if missing:
        raise pytest.UsageError(missing)
    config.addinivalue_line(
        "markers",
        "no_recompiles(warmup=1, kernels=None): fail the test when a Triton kernel compiles a new variant "
        "after its first `warmup` calls in the test body (kernels: only judge these names)")
    config.pluginmanager.register(JitguardSession(config), "jitguard-session")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            names = getattr(item, "fixturenames", None)
            if names is not None and "jitguard_backend" not in names:
                names.insert(0, "jitguard_backend")  # first, so fixtures that call kernels see it


# --- fixtures ---------------------------------------------------------------------------------------

@pytest.fixture
def jitguard_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The backend kernels run on in this test: the GPU when CUDA is available, else `jitguard.offline()`."""
    missing = _require_triton("the jitguard_backend fixture (and @pytest.mark.no_recompiles)", torch_too=True)
    if missing:
        pytest.fail(missing, pytrace=False)
    import torch
    choice = setting(request.config, "jitguard_backend")
    cuda = torch.cuda.is_available()
    if choice == "auto":
        choice = "cuda" if cuda else "offline"
    if choice == "cuda":
        if not cuda:
            pytest.fail("jitguard: --jitguard-backend=cuda but torch.cuda.is_available() is False", pytrace=False)
        yield Backend("cuda", "cuda", True)
        return
    from jitguard.runtime.offline_backend import offline
    compiles = choice == "offline"
    with offline(compile=compiles):
        yield Backend("offline", "cpu", compiles)


@pytest.fixture
def jitguard() -> Iterator[Any]:
    """The `Recorder` of every Triton compile during this test (`.events`, `.variants(name)`, `.recompiles`)."""
    missing = _require_triton("the jitguard fixture")
    if missing:
        pytest.fail(missing, pytrace=False)
    from jitguard.runtime.monitor import watch
    with watch() as recorder:
        yield recorder


# --- running a test ---------------------------------------------------------------------------------

def _guard_for(item: pytest.Item, strict: bool) -> Any:
    marker = item.get_closest_marker(MARKER)
    if marker is None and not strict:
        return None
    from jitguard.guard.recompile_guard import no_recompiles
    if marker is None:
        return no_recompiles(warmup=1)
    unknown = sorted(set(marker.kwargs) - set(_MARKER_ARGS))
    if unknown or len(marker.args) > len(_MARKER_ARGS):
        bad = ", ".join(unknown) or f"{len(marker.args)} positional arguments"
        pytest.fail(f"jitguard: @pytest.mark.no_recompiles got {bad}; it takes warmup=1, kernels=None",
                    pytrace=False)
    options = dict(zip(_MARKER_ARGS, marker.args))
    options.update(marker.kwargs)
    try:
        return no_recompiles(**options)
    except (TypeError, ValueError) as exc:
        pytest.fail(f"jitguard: @pytest.mark.no_recompiles: {exc}", pytrace=False)


_RECORDER = pytest.StashKey[Any]()
_GUARD = pytest.StashKey[Any]()
_FAILED_BY_GUARD = pytest.StashKey[str]()


class JitguardSession:
    """The plugin's per-session part: guards marked tests, records compiles, prints the summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.summary = bool(setting(config, "jitguard"))
        self.strict = bool(setting(config, "jitguard_strict"))
        self.installed_monitor = False
        self.per_test: dict[str, list[dict]] = {}  # nodeid -> compiles, read back from the reports

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[Any]:
        if not self.summary:
            return (yield)
        from jitguard.runtime import monitor
        if monitor.current() is None:
            monitor.install(summary=False)  # one monitor for the session: variant numbers stay process-wide
            self.installed_monitor = True
        with monitor.watch() as recorder:
            item.stash[_RECORDER] = recorder
            try:
                return (yield)
            finally:
                del item.stash[_RECORDER]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[Any]:
        guard = _guard_for(item, self.strict)
        if guard is None:
            return (yield)
        guard.block_file = str(getattr(item, "path", "")) or None  # name the test's own line in messages
        item.stash[_GUARD] = guard
        from jitguard.runtime.monitor import RecompileError
        try:
            with guard:
                result = yield
        except RecompileError as exc:
            advice = "".join(f"\n{line}" for line in fix_lines(exc.events, getattr(exc, "prices", None)))
            item.stash[_FAILED_BY_GUARD] = str(exc) + "\n\n" + self._checked_by(item) + advice
            raise
        return result

    def _checked_by(self, item: pytest.Item) -> str:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            why = f"{_spelling(self.config, 'jitguard_strict')} (every test runs as if marked no_recompiles(warmup=1))"
        else:
            shown = [repr(a) for a in marker.args] + [f"{k}={v!r}" for k, v in marker.kwargs.items()]
            why = f"@pytest.mark.no_recompiles({', '.join(shown)})"
        path, line, _ = item.location
        where = f"{path}:{line + 1}" if line is not None else path
        return f"(checked by jitguard: {why} on {item.name}, {where})"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        if call.when == "teardown" and _RECORDER in item.stash:
            guard = item.stash.get(_GUARD, None)
            item.user_properties.append((_PROPERTY, json.dumps(_compiles_of(item.stash[_RECORDER], guard))))
        report = yield
        message = item.stash.get(_FAILED_BY_GUARD, None)
        if call.when == "call" and message is not None and report.failed:
            report.longrepr = message  # the list of new variants says it all: no plugin traceback
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in getattr(report, "user_properties", ()):
            if name == _PROPERTY:
                self.per_test[report.nodeid] = json.loads(value)

    def pytest_sessionfinish(self) -> None:
        if self.installed_monitor:
            from jitguard.runtime import monitor
            monitor.uninstall()
            self.installed_monitor = False

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.summary or hasattr(self.config, "workerinput"):
            return
        lines = summary_lines(self.per_test)
        terminalreporter.write_sep("=", lines[0])
        for line in lines[1:]:
            terminalreporter.write_line(line)


def _advised_demotions(events: list[Any]) -> dict[tuple[str, str, str], str]:
    """{(kernel label, param, `--param` text): file} for each demotion these compiles advise."""
    import os

    from jitguard.events import OPTION_FOR_ADVICE
    from jitguard.explain import without_weaker_advice
    by_kernel: dict[tuple[str, str, str], list[Any]] = {}
    for event in events:
        by_kernel.setdefault((event.label, event.called_as, event.file), []).extend(event.causes)
    advised: dict[tuple[str, str, str], str] = {}
    for (label, kernel, file), causes in by_kernel.items():
        for cause in without_weaker_advice(causes):
            option = OPTION_FOR_ADVICE.get(cause.advice or "")
            if option is None:
                continue
            relative = os.path.relpath(file) if file else ""
            text = f"{kernel}:{cause.param}" + (":align" if option == "do_not_specialize_on_alignment" else "")
            advised[(label, cause.param, text)] = relative if relative and not relative.startswith("..") else file
    return advised


def _command(advised: dict[tuple[str, str, str], str]) -> str | None:
    import shlex

    if not advised or not all(advised.values()):
        return None
    params = [f"--param {shlex.quote(text)}" for _, _, text in advised]
    return " ".join(["jitguard fix", *params, *map(shlex.quote, dict.fromkeys(advised.values()))])


def fix_command_line(events: list[Any], prices: dict[str, dict[str, dict[str, Any]]] | None = None) -> str | None:
    """The `jitguard fix` command applying the demotions these compiles advise, or None when none does.
    With `prices` ({kernel label: {param: cost JSON}}, what the failure showed), only those priced
    `free` are in it.

        jitguard fix --param add_kernel:n:align kernels/ops.py
    """
    advised = _advised_demotions(events)
    if prices is not None:
        advised = {key: file for key, file in advised.items() if _verdict(prices, key) == "free"}
    return _command(advised)


def _verdict(prices: dict[str, dict[str, dict[str, Any]]], key: tuple[str, str, str]) -> str:
    label, param, _ = key
    cost = (prices.get(label) or {}).get(param)
    return str(cost.get("verdict")) if isinstance(cost, dict) else "unknown"


def fix_lines(events: list[Any], prices: dict[str, dict[str, dict[str, Any]]] | None) -> list[str]:
    """The failure's last lines: `fix with:` the free demotions (all advised ones when nothing was
    priced), then each demotion held back for its price, with what to do instead and how to accept it."""
    command = fix_command_line(events, prices)
    lines = [f"fix with: {command}"] if command else []
    if prices is None:
        return lines
    from jitguard.render_text import WARMUP_INSTEAD
    for key, file in _advised_demotions(events).items():
        verdict = _verdict(prices, key)
        if verdict == "free":
            continue
        why = "costly" if verdict == "costly" else "price unknown"
        accept = _command({key: file})
        lines.append(f"not in the command ({why}, see the price above): {key[0]}.{key[1]}: {WARMUP_INSTEAD}"
                     + (f"; or accept it: {accept}" if accept else ""))
    return lines


def _compiles_of(recorder: Any, guard: Any) -> list[dict]:
    late = {id(c.event) for c in guard.new_variants} if guard is not None else set()
    out = []
    for event in recorder.events:
        out.append({"kernel": event.label, "where": f"{event.file}:{event.line}", "variant": event.variant,
                    "ms": event.compile_ms, "disk_hit": event.disk_cache_hit, "arrived": event.arrived,
                    "after_warmup": id(event) in late,
                    "causes": [[c.param, c.advice] for c in event.causes]})
    return out


def summary_lines(per_test: dict[str, list[dict]]) -> list[str]:
    """The `--jitguard` summary: compiles per test, then per kernel (variants, ms, tests, causes)."""
    lines = ["jitguard: Triton compiles"]
    compiled = {nodeid: compiles for nodeid, compiles in per_test.items() if compiles}
    if not compiled:
        lines.append(f"no Triton kernel compiled in {len(per_test)} tests")
        return lines
    lines.append(f"per test ({len(compiled)} of {len(per_test)} tests compiled):")
    width = max(len(n) for n in compiled)
    for nodeid in sorted(compiled):
        compiles = compiled[nodeid]
        per_kernel: dict[str, int] = {}
        for c in compiles:
            per_kernel[c["kernel"]] = per_kernel.get(c["kernel"], 0) + 1
        ms = sum(c["ms"] or 0.0 for c in compiles)
        hits = sum(1 for c in compiles if c["disk_hit"] and c.get("arrived") in (None, "disk"))
        others = {a: sum(1 for c in compiles if c.get("arrived") == a) for a in ("bundle", "remote")}
        late = sum(1 for c in compiles if c["after_warmup"])
        kernels = ", ".join(f"{k} x{n}" for k, n in per_kernel.items())
        extra = f", {hits} from disk cache" if hits else ""
        extra += "".join(f", {n} from {'a bundle' if a == 'bundle' else 'the remote cache'}"
                         for a, n in others.items() if n)
        verdict = f"  {late} NEW AFTER WARM-UP" if late else ""
        what = "compile" if len(compiles) == 1 else "compiles"
        lines.append(f"  {nodeid.ljust(width)}  {len(compiles)} {what} ({ms:.0f} ms{extra}): {kernels}{verdict}")
    lines.append("per kernel:")
    from jitguard.events import Cause
    from jitguard.explain import fix_hint, short_path, without_weaker_advice
    rows: dict[tuple[str, str], dict] = {}
    for nodeid, compiles in compiled.items():
        for c in compiles:
            row = rows.setdefault((c["kernel"], c["where"]), {"compiles": 0, "ms": 0.0, "tests": set(), "late": 0,
                                                              "causes": []})
            row["compiles"] += 1
            row["ms"] += c["ms"] or 0.0
            row["tests"].add(nodeid)
            row["late"] += 1 if c["after_warmup"] else 0
            row["causes"].extend(Cause(param, "", "", advice) for param, advice in c["causes"])
    header = ("kernel", "defined at", "compiles", "ms", "tests", "after warm-up", "causes", "fix")
    table = []
    for (kernel, where), row in sorted(rows.items(), key=lambda kv: -kv[1]["compiles"]):
        per_param: dict[str, int] = {}
        for cause in row["causes"]:
            per_param[cause.param] = per_param.get(cause.param, 0) + 1
        causes = ", ".join(f"{p} x{n}" for p, n in sorted(per_param.items(), key=lambda kv: -kv[1]))
        table.append((kernel, short_path(where), str(row["compiles"]), f"{row['ms']:.0f}", str(len(row["tests"])),
                      str(row["late"]), causes or "-", fix_hint(without_weaker_advice(row["causes"])) or "-"))
    widths = [max(len(r[i]) for r in table + [header]) for i in range(len(header) - 1)]
    for cells in [header] + table:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths)) + "  " + cells[-1])
    lines.append("(a guarded test compiles its kernels afresh, often from Triton's disk cache: "
                 "see jitguard.no_recompiles)")
    return lines
