"""Warm-up pre-tune: tune, at start-up, every autotune bucket a report (or a run's records) saw.

Tuning needs real arguments (the benchmark launches the kernel), so jitguard cannot invent them:
for each kernel the caller gives a launcher that runs the kernel once for given key values, e.g.
`lambda num_tokens: moe(torch.empty(num_tokens, hidden, device="cuda"), ...)`. `pretune` calls it
once per bucket seen, with the bucket's value (for `jitguard.autotune` kernels the bucket's upper
bound, which falls in the same bucket; for `triton.autotune` kernels each value seen), so serving
finds every tuning done.

    >>> report = json.load(open("report.json"))                      # doctest: +SKIP
    >>> jitguard.autotune_pretune.pretune(report, {"moe_kernel": run_moe})   # doctest: +SKIP
    PretuneResult(pretuned={'moe_kernel': [{'num_tokens': 1}, {'num_tokens': 2}, ...]}, ...)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jitguard.tuning_records import summarize_tunings


@dataclass
class PretuneResult:
    """What `pretune` did: key values launched per kernel, kernels with no launcher, launch errors."""

    pretuned: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    missing_launchers: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def keys_to_pretune(source: Any) -> dict[str, list[dict[str, Any]]]:
    """{kernel: [key values, one per bucket]} from a JSON report ({"kernels": [...]} with
    `autotune.keys_tuned`), a `summarize_tunings` result, or tuning records (objects or dicts)."""
    if isinstance(source, Mapping) and isinstance(source.get("kernels"), list):
        return {k.get("name", "?"): list((k.get("autotune") or {}).get("keys_tuned") or [])
                for k in source["kernels"] if (k.get("autotune") or {}).get("keys_tuned")}
    if isinstance(source, Mapping):
        return {name: list(entry.get("keys_tuned") or []) for name, entry in source.items()
                if isinstance(entry, Mapping)}
    return {name: entry["keys_tuned"] for name, entry in summarize_tunings(source).items()}


def pretune(source: Any, launchers: Mapping[str, Callable[..., Any]]) -> PretuneResult:
    """Launch each kernel once per bucket its records saw: `launchers[kernel](**key_values)`.

    A launcher that raises is reported in `.errors` (kernel and key values) and the others still
    run; a kernel with no launcher is listed in `.missing_launchers`.
    """
    result = PretuneResult()
    for kernel, keys in keys_to_pretune(source).items():
        launch = launchers.get(kernel)
        if launch is None:
            result.missing_launchers.append(kernel)
            continue
        done = result.pretuned.setdefault(kernel, [])
        for values in keys:
            try:
                launch(**values)
            except Exception as exc:  # one bad bucket must not stop the others
                result.errors.append(f"{kernel} {values}: {type(exc).__name__}: {exc}")
                continue
            done.append(dict(values))
    return result

