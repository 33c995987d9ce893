"""What `jitguard fix` is asked to do: `--param KERNEL:PARAM[:align]` and `--from REPORT`.

A report is either the runtime report (`jitguard report DIR --json`, with `kernels`) or the
static scan (`jitguard scan --json`, with `findings`); the kind is detected from its keys.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from jitguard.events import OPTION_FOR_ADVICE  # advice code -> decorator option (None: no rewrite)
from jitguard.report.json_input import loads_json

#: why some advice is not a decorator edit, said once per code in the summary.
NO_REWRITE_REASON = {
    "constexpr_values": "a tl.constexpr takes many values: make it a runtime argument or bucket it (hand edit)",
    "expected": "expected recompiles (dtype, launch options, autotune configs): nothing to change",
}


class DemotionInputError(ValueError):
    """A `--param` or `--from` input that cannot be used; the message names it."""


@dataclass(frozen=True)
class Demotion:
    """One request: stop specializing `param` of `kernel` the way `option` says.

    `kernel` is a function name or a dotted qualified name (`Class.kernel`); `file`/`line` come
    from a report and pick among same-named kernels; `origin` says where the request came from.
    """

    kernel: str
    param: str
    option: str
    origin: str
    file: str | None = None
    line: int | None = None
    advice: str | None = None
    # The runtime report's `kernels[]` entry this request came from (its variants and prices).
    report_entry: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class AdviceNote:
    """Advice in a report that needs no decorator change (said in the summary)."""

    kernel: str
    param: str
    advice: str


def parse_param_option(text: str) -> Demotion:
    """Parse `KERNEL:PARAM` (do_not_specialize) or `KERNEL:PARAM:align` (..._on_alignment)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not all(part.strip() for part in parts):
        raise DemotionInputError(f"--param {text!r}: expected KERNEL:PARAM or KERNEL:PARAM:align")
    option = "do_not_specialize"
    if len(parts) == 3:
        if parts[2] != "align":
            raise DemotionInputError(f"--param {text!r}: the only suffix is ':align', not {parts[2]!r}")
        option = "do_not_specialize_on_alignment"
    return Demotion(kernel=parts[0].strip(), param=parts[1].strip(), option=option, origin="--param")


def parse_bucket_option(text: str) -> Demotion:
    """Parse `KERNEL:PARAM[=STRATEGY]` (default pow2): migrate KERNEL's autotune to `jitguard.autotune`
    with PARAM bucketed."""
    from jitguard.codemod.autotune_migration import BUCKET_PREFIX, check_strategy

    target, _, strategy = text.partition("=")
    parts = target.split(":")
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise DemotionInputError(f"--bucket {text!r}: expected KERNEL:PARAM or KERNEL:PARAM=STRATEGY")
    strategy = strategy.strip() or "pow2"
    problem = check_strategy(strategy)
    if problem is not None:
        raise DemotionInputError(f"--bucket {text!r}: {problem}")
    return Demotion(kernel=parts[0].strip(), param=parts[1].strip(), option=BUCKET_PREFIX + strategy,
                    origin="--bucket")


def _bucket_requests(origin: str, kernel: Mapping[str, Any]) -> list[Demotion]:
    """The report's autotune advice for one kernel: each varying key parameter worth bucketing."""
    from jitguard.codemod.autotune_migration import BUCKET_PREFIX
    from jitguard.tuning.records import suggested_bucket

    entry = kernel.get("autotune")
    if not isinstance(entry, dict):
        return []
    file, line = kernel.get("file"), kernel.get("line")
    return [
        Demotion(kernel=str(kernel["name"]), param=param, option=BUCKET_PREFIX + strategy, origin=origin,
                 file=file if isinstance(file, str) else None,
                 line=line if isinstance(line, int) and not isinstance(line, bool) else None, advice="autotune")
        for param, strategy in suggested_bucket(entry).items()
    ]


def _advice_request(
    origin: str, kernel: str, param: str, advice: object, file: object, line: object,
    entry: Mapping[str, Any] | None = None,
) -> Demotion | AdviceNote | None:
    if advice is None:
        return None
    if not isinstance(advice, str) or advice not in OPTION_FOR_ADVICE:
        raise DemotionInputError(f"{origin}: kernel `{kernel}` parameter `{param}`: unknown advice {advice!r}")
    option = OPTION_FOR_ADVICE[advice]
    if option is None:
        return AdviceNote(kernel, param, advice)
    return Demotion(
        kernel=kernel,
        param=param,
        option=option,
        origin=origin,
        file=file if isinstance(file, str) else None,
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        advice=advice,
        report_entry=entry,
    )


def _read_json(path: str | Path, stdin: IO[bytes] | None = None) -> Any:
    """The JSON in `path`, read once: `-` is standard input, and a pipe (`<(cat scan.json)`, /dev/stdin)
    can be read only once."""
    origin = "stdin" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            raw = (stdin if stdin is not None else sys.stdin.buffer).read()
        else:
            with open(path, "rb") as handle:
                raw = handle.read()
        text = raw.decode("utf-8")
    except OSError as exc:
        raise DemotionInputError(f"{origin}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise DemotionInputError(f"{origin}: not UTF-8 text") from None
    return loads_json(text, origin, DemotionInputError)


@dataclass(frozen=True)
class LoadedReport:
    """A `--from` file read once: a runtime report (`kernels`) or a scan (`findings`)."""

    origin: str
    data: Any

    @property
    def is_scan(self) -> bool:
        """True for a `jitguard scan --json` result (it records no variants)."""
        return isinstance(self.data, dict) and isinstance(self.data.get("findings"), list) and not isinstance(
            self.data.get("kernels"), list)

    def requests(self) -> tuple[list[Demotion], list[AdviceNote]]:
        """Its rewrite requests and notes (see `load_report`)."""
        return _requests(self.origin, self.data)

    def kernel_entries(self) -> dict[str, Mapping[str, Any]]:
        """A runtime report's `kernels[]` entries by name and qualname ({} for a scan JSON)."""
        return _kernel_entries(self.data)

    def adviceless_findings(self) -> int:
        """How many scan findings carry no rewrite advice."""
        findings = self.data.get("findings") if isinstance(self.data, dict) else None
        if not isinstance(findings, list):
            return 0
        return sum(1 for finding in findings if isinstance(finding, dict) and finding.get("advice") is None)


def read_report(path: str | Path, stdin: IO[bytes] | None = None) -> LoadedReport:
    """Read `--from PATH` once (`-`: standard input); DemotionInputError names the file when it cannot be used."""
    return LoadedReport("stdin" if str(path) == "-" else str(path), _read_json(path, stdin))


def report_kernel_entries(path: str | Path) -> dict[str, Mapping[str, Any]]:
    """A runtime report's `kernels[]` entries by name and qualname ({} for a scan JSON)."""
    return _kernel_entries(_read_json(path))


def _kernel_entries(data: Any) -> dict[str, Mapping[str, Any]]:
    entries: dict[str, Mapping[str, Any]] = {}
    kernels = data.get("kernels") if isinstance(data, dict) else None
    for entry in kernels if isinstance(kernels, list) else []:
        if isinstance(entry, dict):
            for name in (entry.get("binding"), entry.get("name"), entry.get("qualname")):
                if isinstance(name, str) and name:
                    entries.setdefault(name, entry)
    return entries


def finding_request(origin: str, finding: object) -> Demotion | AdviceNote | None:
    """The request one `jitguard scan --json` finding makes: a demotion, an autotune bucket (advice
    `bucket`: the key by powers of two), a note, or None (a file-level finding names no parameter)."""
    if not isinstance(finding, dict) or not finding.get("kernel") or not finding.get("param"):
        return None
    kernel, param = str(finding.get("qualname") or finding["kernel"]), str(finding["param"])
    file, line = finding.get("file"), finding.get("line")
    if finding.get("advice") == "bucket":
        from jitguard.codemod.autotune_migration import BUCKET_PREFIX

        return Demotion(kernel=kernel, param=param, option=BUCKET_PREFIX + "pow2", origin=origin,
                        file=file if isinstance(file, str) else None,
                        line=line if isinstance(line, int) and not isinstance(line, bool) else None, advice="bucket")
    return _advice_request(origin, kernel, param, finding.get("advice"), file, line)


def load_report(path: str | Path) -> tuple[list[Demotion], list[AdviceNote]]:
    """Read a runtime report or a scan JSON and return its rewrite requests and its notes.

    Raises DemotionInputError (with the file name) when the file is unreadable, not JSON, or
    neither kind of report.
    """
    return read_report(path).requests()


def _requests(origin: str, data: Any) -> tuple[list[Demotion], list[AdviceNote]]:
    requests: list[Demotion | AdviceNote | None] = []
    if isinstance(data, dict) and isinstance(data.get("kernels"), list):
        for index, kernel in enumerate(data["kernels"]):
            if not isinstance(kernel, dict) or not isinstance(kernel.get("name"), str):
                raise DemotionInputError(f"{origin}: kernels[{index}] has no name")
            params = kernel.get("params") or {}
            if not isinstance(params, dict):
                raise DemotionInputError(f"{origin}: kernel `{kernel['name']}`: params is not an object")
            # A function jitted under another name is fixed at that jit call alone (the report has
            # one entry per binding; the function's name would edit every call that jits it).
            binding = kernel.get("binding")
            name = binding if isinstance(binding, str) and binding else kernel["name"]
            for param, info in params.items():
                advice = info.get("advice") if isinstance(info, dict) else None
                requests.append(_advice_request(
                    origin, name, param, advice, kernel.get("file"), kernel.get("line"), kernel
                ))
            requests += _bucket_requests(origin, kernel)
    elif isinstance(data, dict) and isinstance(data.get("findings"), list):
        requests += [finding_request(origin, finding) for finding in data["findings"]]
    else:
        raise DemotionInputError(
            f"{origin}: not a jitguard report or scan (expected a 'kernels' or 'findings' list)"
        )
    demotions = [item for item in requests if isinstance(item, Demotion)]
    notes = [item for item in requests if isinstance(item, AdviceNote)]
    return demotions, notes
