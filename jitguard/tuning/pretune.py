"""Warm-up pre-tune: tune, at start-up, every autotune bucket a report (or a run's records) saw.

Tuning needs real arguments (the benchmark launches the kernel), so jitguard cannot invent them:
for each kernel the caller gives a launcher that runs the kernel once for given key values, e.g.
`lambda num_tokens: moe(torch.empty(num_tokens, hidden, device="cuda"), ...)`. `pretune` calls it
once per bucket seen, with the bucket's value (for `jitguard.autotune` kernels the bucket's upper
bound, which falls in the same bucket; for `triton.autotune` kernels each value seen), so serving
finds every tuning done.

Triton's tuning key also holds the tensor arguments' dtypes, so a key value served with fp16 and
with bf16 tensors is two tunings. `tunings_to_pretune(source)` lists them ({"key": {param: value},
"dtypes": ["torch.float16", ...]}, the dtypes in argument order as `str(tensor.dtype)`), and
`pretune(source, launchers, pass_dtypes=True)` calls `launcher(dtypes, **key_values)` once per
key value and dtype set, so the launcher can build tensors of those dtypes. Without it, launchers
are called as always, `launcher(**key_values)`, once per key value.

    >>> report = json.load(open("report.json"))                      # doctest: +SKIP
    >>> jitguard.tuning.pretune.pretune(report, {"moe_kernel": run_moe})   # doctest: +SKIP
    PretuneResult(pretuned={'moe_kernel': [{'num_tokens': 1}, {'num_tokens': 2}, ...]}, ...)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jitguard.tuning.records import summarize_tunings


@dataclass
class PretuneResult:
    """What `pretune` did: key values launched per kernel, kernels with no launcher, launch errors."""

    pretuned: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # {kernel: [{"key": key values, "dtypes": dtypes or None}]}, one per launch that ran
    pretuned_tunings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
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


def _autotune_entries(source: Any) -> dict[str, Mapping[str, Any]]:
    """{kernel: its autotune entry} from the sources `keys_to_pretune` takes."""
    if isinstance(source, Mapping) and isinstance(source.get("kernels"), list):
        return {k.get("name", "?"): k["autotune"] for k in source["kernels"]
                if isinstance(k.get("autotune"), Mapping) and k["autotune"].get("keys_tuned")}
    if isinstance(source, Mapping):
        return {name: entry for name, entry in source.items() if isinstance(entry, Mapping)}
    return dict(summarize_tunings(source))


def tunings_to_pretune(source: Any) -> dict[str, list[dict[str, Any]]]:
    """{kernel: [{"key": key values, "dtypes": [...]}, one per key value and tensor dtype set]} from
    the sources `keys_to_pretune` takes. A source written before entries carried
    `tunings_by_dtype` gives each `keys_tuned` value once with `"dtypes": None` (not recorded)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, entry in _autotune_entries(source).items():
        by_dtype = entry.get("tunings_by_dtype")
        if isinstance(by_dtype, list):
            out[name] = [{"key": dict(t.get("key") or {}), "dtypes": list(t.get("dtypes") or [])}
                         for t in by_dtype if isinstance(t, Mapping)]
        else:
            out[name] = [{"key": dict(k), "dtypes": None} for k in entry.get("keys_tuned") or []]
    return out


def pretune(source: Any, launchers: Mapping[str, Callable[..., Any]], *, pass_dtypes: bool = False) -> PretuneResult:
    """Launch each kernel once per bucket its records saw: `launchers[kernel](**key_values)`; with
    `pass_dtypes=True`, once per bucket and tensor dtype set: `launchers[kernel](dtypes, **key_values)`
    (see `tunings_to_pretune`; `dtypes` is None for a source that did not record them).

    A launcher that raises is reported in `.errors` (kernel, key values, and the dtypes when
    passed) and the others still run; a kernel with no launcher is listed in `.missing_launchers`.
    """
    result = PretuneResult()
    if pass_dtypes:
        plan = tunings_to_pretune(source)
    else:
        plan = {name: [{"key": dict(k), "dtypes": None} for k in keys]
                for name, keys in keys_to_pretune(source).items()}
    for kernel, tunings in plan.items():
        launch = launchers.get(kernel)
        if launch is None:
            result.missing_launchers.append(kernel)
            continue
        done = result.pretuned.setdefault(kernel, [])
        done_tunings = result.pretuned_tunings.setdefault(kernel, [])
        for tuning in tunings:
            values, dtypes = tuning["key"], tuning["dtypes"]
            try:
                if pass_dtypes:
                    launch(dtypes, **values)
                else:
                    launch(**values)
            except Exception as exc:  # one bad bucket must not stop the others
                shown = f" dtypes {dtypes}" if dtypes is not None else ""
                result.errors.append(f"{kernel} {values}{shown}: {type(exc).__name__}: {exc}")
                continue
            done.append(dict(values))
            done_tunings.append({"key": dict(values), "dtypes": dtypes})
    return result

