"""What each demotion `jitguard fix` is asked for costs, and whether it is applied.

A runtime report priced by `jitguard report --json` carries `params[NAME].cost`; `fix` reads it.
An unpriced report (`--no-cost`, an older report) is priced here with `jitguard.price.demotion_cost`
when Triton is importable and the report recorded variants; a scan JSON has no variants, so its
demotions are `unknown`. Free and unknown demotions are applied, costly ones only with
`--accept-cost`; `--param` is the user's explicit choice and always applied, its price said.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitguard.codemod.demotions import Demotion
from jitguard.events import OPTION_FOR_ADVICE

NO_VARIANT = "no recorded variant (use jitguard report --json)"


@dataclass(frozen=True)
class Price:
    """The verdict on one demotion, as `jitguard.price.demotion_cost` words it (`to_json` form)."""

    verdict: str  # "free" | "costly" | "unknown"
    detail: str
    alternative: str | None = None

    @classmethod
    def from_json(cls, data: object) -> Price | None:
        """The report's `cost` object, or None when it is missing or not one."""
        if not isinstance(data, Mapping) or data.get("verdict") not in ("free", "costly", "unknown"):
            return None
        alternative = data.get("alternative")
        return cls(str(data["verdict"]), str(data.get("detail") or ""),
                   alternative if isinstance(alternative, str) and alternative else None)


@dataclass
class PricedRequests:
    """The demotions to apply, and one line for each price worth saying (stderr)."""

    apply: list[Demotion] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    skipped: int = 0


def triton_importable() -> bool:
    """True when the cost check can compile (Triton is installed); never imports it here."""
    return importlib.util.find_spec("triton") is not None


Pricer = Callable[[Mapping[str, Any], str, str], Price]


def import_roots(entries: Mapping[str, Mapping[str, Any]], files: Sequence[Path]) -> list[str]:
    """Directories to import report kernels from: for module `a.b`, the root of a file `.../a/b.py`
    among those `fix` edits (the kernel found in the file you edit), then the working directory.

    A console script's `sys.path` starts at its own `bin/`, so without this the user's package,
    importable from the project root, would not be found.
    """
    roots: list[str] = []
    modules = {entry.get("module") for entry in entries.values() if isinstance(entry.get("module"), str)}
    for module in sorted(m for m in modules if m and m != "__main__"):
        tail = Path(*module.split("."))
        for file in files:
            resolved = file.resolve()
            candidates = (resolved.with_suffix(""), resolved.parent if resolved.name == "__init__.py" else None)
            for candidate in candidates:
                if candidate is not None and candidate.parts[-len(tail.parts):] == tail.parts:
                    root = str(Path(*candidate.parts[: -len(tail.parts)]))
                    if root not in roots:
                        roots.append(root)
    cwd = os.getcwd()
    return roots + ([cwd] if cwd not in roots else [])


def compiling_pricer(roots: Sequence[str] = ()) -> Pricer:
    """A pricer that compiles through one `DemotionCostChecker` (its cache shared by the whole run),
    importing kernels with `roots` ahead on `sys.path`."""
    from jitguard.price.demotion_cost import DemotionCostChecker

    checker = DemotionCostChecker()

    def price(entry: Mapping[str, Any], param: str, option: str) -> Price:
        added = [root for root in roots if root not in sys.path]
        sys.path[:0] = added
        try:
            cost = checker.cost_for_report_kernel(entry, param, option)
        finally:
            for root in added:
                if root in sys.path:
                    sys.path.remove(root)
        return Price(cost.verdict, cost.detail, cost.alternative)

    return price


def _label(demotion: Demotion) -> str:
    suffix = ":align" if demotion.option == "do_not_specialize_on_alignment" else ""
    return f"{demotion.kernel}:{demotion.param}{suffix}"


class _Prices:
    """Prices on demand: the report's own, else computed (once per kernel, parameter and option)."""

    def __init__(self, entries: Mapping[str, Mapping[str, Any]], pricer: Pricer | None, why_not: str) -> None:
        self._entries = entries
        self._pricer = pricer
        self._why_not = why_not
        self._done: dict[tuple[str, str, str], Price] = {}

    def _entry(self, demotion: Demotion) -> Mapping[str, Any] | None:
        if demotion.report_entry is not None:
            return demotion.report_entry
        return self._entries.get(demotion.kernel) or self._entries.get(demotion.kernel.rsplit(".", 1)[-1])

    def of(self, demotion: Demotion) -> Price:
        key = (demotion.kernel, demotion.param, demotion.option)
        if key in self._done:
            return self._done[key]
        entry = self._entry(demotion)
        recorded = None
        info = (entry.get("params") or {}).get(demotion.param) if entry is not None else None
        # The report priced the demotion its advice asks for; a --param asking for another one is priced anew.
        if isinstance(info, Mapping) and OPTION_FOR_ADVICE.get(info.get("advice") or "") == demotion.option:
            recorded = Price.from_json(info.get("cost"))
        if recorded is not None:
            price = recorded
        elif entry is None or not entry.get("variant_list"):
            price = Price("unknown", NO_VARIANT)
        elif self._pricer is None:
            price = Price("unknown", self._why_not)
        else:
            try:
                price = self._pricer(entry, demotion.param, demotion.option)
            except Exception as exc:  # a failed check leaves the price unknown, never the fix undone
                price = Price("unknown", f"the cost check failed: {type(exc).__name__}: {exc}"[:240])
        self._done[key] = price
        return price


def price_requests(
    demotions: Sequence[Demotion],
    entries: Mapping[str, Mapping[str, Any]],
    accept_cost: bool = False,
    pricer: Pricer | None = None,
    files: Sequence[Path] = (),
    on_compile: Callable[[], None] | None = None,
) -> PricedRequests:
    """Decide which `demotions` to apply and what to say about their prices.

    `entries`: the report's kernel entries by name (for `--param` kernels the report names; empty
    without a report). `pricer` computes a price the report lacks; None (Triton missing) makes
    such demotions `unknown`, saying why. `files`: the files `fix` works on (where report modules
    are imported from). `on_compile` is called once, before the first compile.
    """
    if pricer is None and triton_importable():
        pricer = _lazy(lambda: compiling_pricer(import_roots(entries, files)), on_compile)
    why_not = "not priced: Triton is not installed (pip install 'jitguard[monitor]')"
    prices = _Prices(entries, pricer, why_not)
    result = PricedRequests()
    said: set[tuple[str, str, str]] = set()
    unrecorded: list[str] = []
    for demotion in demotions:
        if demotion.option.startswith("bucket:"):  # an autotune migration: no codegen to price
            result.apply.append(demotion)
            continue
        price = prices.of(demotion)
        key = (demotion.kernel, demotion.param, demotion.option)
        first = key not in said
        said.add(key)
        if demotion.origin == "--param":
            result.apply.append(demotion)
            if first:
                result.lines.append(f"--param {_label(demotion)}: {_describe(price)}")
            continue
        if price.verdict == "costly" and not accept_cost:
            result.skipped += first
            if first:
                instead = f"; instead: {price.alternative}" if price.alternative else ""
                result.lines.append(f"skipped: {_label(demotion)}: costly: {price.detail}{instead} "
                                    "(--accept-cost applies it)")
            continue
        result.apply.append(demotion)
        if first and price.verdict == "costly":
            result.lines.append(f"accepted cost: {_label(demotion)}: costly: {price.detail}")
        elif first and price.verdict == "unknown" and not entries and price.detail == NO_VARIANT:
            unrecorded.append(_label(demotion))  # a scan JSON: one reason for all, said once
        elif first and price.verdict == "unknown":
            result.lines.append(f"note: {_label(demotion)}: price unknown: {price.detail}; applied")
    if unrecorded:
        shown = ", ".join(unrecorded[:3]) + (", ..." if len(unrecorded) > 3 else "")
        result.lines.append(f"note: {len(unrecorded)} demotion{'s' if len(unrecorded) != 1 else ''} applied unpriced "
                            f"({shown}): this report records no variants; `jitguard report --json` prices them")
    return result


def _describe(price: Price) -> str:
    if price.verdict == "unknown":
        return f"price unknown: {price.detail}"
    return f"{price.verdict}: {price.detail}" if price.detail else price.verdict


def _lazy(factory: Callable[[], Pricer], on_first: Callable[[], None] | None = None) -> Pricer:
    """`factory()` made on first use: a report that is fully priced never loads the compiler."""
    made: list[Pricer] = []

    def price(entry: Mapping[str, Any], param: str, option: str) -> Price:
        if not made:
            if on_first is not None:
                on_first()
            made.append(factory())
        return made[0](entry, param, option)

    return price
