"""What each demotion `jitguard fix` is asked for costs, and whether it is applied.

A runtime report priced by `jitguard report --json` carries `params[NAME].cost`; `fix` reads it.
An unpriced report (`--no-cost`, an older report) is priced here with `jitguard.price.demotion_cost`
when Triton is importable and the report recorded variants; a scan JSON has no variants, so its
demotions are `unknown`. Free demotions are applied; costly ones only with `--accept-cost`, unknown
ones only with `--accept-unknown` (each skipped one is listed with its reason and what to do
instead); `--param` is the user's explicit choice and always applied, its price said.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitguard.codemod.demotions import Demotion
from jitguard.events import OPTION_FOR_ADVICE
from jitguard.render_text import WARMUP_INSTEAD

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
    skipped: int = 0  # costly demotions not applied
    skipped_unknown: int = 0  # demotions of unknown price not applied
    held: list[Demotion] = field(default_factory=list)  # every demotion not applied (its kernel must still exist)


def triton_importable() -> bool:
    """True when the cost check can compile (Triton is installed); never imports it here."""
    return importlib.util.find_spec("triton") is not None


Pricer = Callable[[Mapping[str, Any], str, str], Price]


def edited_module_files(entries: Mapping[str, Mapping[str, Any]], files: Sequence[Path]) -> dict[str, tuple[str, str]]:
    """{module: (file, root)} for each report module `a.b` with a file `<root>/a/b.py` among those `fix`
    edits: the kernel is priced from the file you edit (the report may come from another machine)."""
    found: dict[str, tuple[str, str]] = {}
    modules = {entry.get("module") for entry in entries.values() if isinstance(entry.get("module"), str)}
    for module in sorted(m for m in modules if m and m != "__main__"):
        tail = Path(*module.split("."))
        for file in files:
            resolved = file.resolve()
            candidates = (resolved.with_suffix(""), resolved.parent if resolved.name == "__init__.py" else None)
            for candidate in candidates:
                if candidate is not None and candidate.parts[-len(tail.parts):] == tail.parts:
                    found.setdefault(module, (str(resolved), str(Path(*candidate.parts[: -len(tail.parts)]))))
    return found


def compiling_pricer(price_from: Sequence[str] = (), data_dirs: Sequence[str] = (),
                     edited: Mapping[str, tuple[str, str]] | None = None) -> Pricer:
    """A pricer that compiles through one `DemotionCostChecker` (its cache shared by the whole run).

    Kernels are loaded as `jitguard.replay.kernel_loading` allows: from this environment's import
    roots, `price_from` folders and the `edited` files (`edited_module_files`: a report module's
    kernel is priced from the file `fix` edits), never from `data_dirs` (the report's folder)."""
    from jitguard.price.demotion_cost import DemotionCostChecker
    from jitguard.replay.kernel_loading import KernelTrust

    edited = dict(edited or {})
    trust = KernelTrust(data_dirs=tuple(data_dirs), extra_roots=tuple(price_from),
                        named_files=tuple(file for file, _ in edited.values()),
                        naming_roots=tuple(root for _, root in edited.values()))
    checker = DemotionCostChecker(trust=trust)

    def price(entry: Mapping[str, Any], param: str, option: str) -> Price:
        local = edited.get(str(entry.get("module") or ""))
        cost = checker.cost_for_report_kernel(dict(entry, file=local[0]) if local else entry, param, option)
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

    def entry(self, demotion: Demotion) -> Mapping[str, Any] | None:
        """The report's kernel entry a demotion names, or None."""
        if demotion.report_entry is not None:
            return demotion.report_entry
        return self._entries.get(demotion.kernel) or self._entries.get(demotion.kernel.rsplit(".", 1)[-1])

    def of(self, demotion: Demotion) -> Price:
        key = (demotion.kernel, demotion.param, demotion.option)
        if key in self._done:
            return self._done[key]
        entry = self.entry(demotion)
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


@dataclass(frozen=True)
class PricePolicy:
    """Which verdicts `fix` applies besides `free`, and how its lines word what happens."""

    accept_cost: bool = False
    accept_unknown: bool = False
    writing: bool = True  # False under --diff/--check: nothing is written, lines say "would"

    @property
    def applied(self) -> str:
        return "applied" if self.writing else "would be applied"


def price_requests(
    demotions: Sequence[Demotion],
    entries: Mapping[str, Mapping[str, Any]],
    policy: PricePolicy = PricePolicy(),
    pricer: Pricer | None = None,
    files: Sequence[Path] = (),
    price_from: Sequence[str] = (),
    data_dirs: Sequence[str] = (),
    on_compile: Callable[[], None] | None = None,
) -> PricedRequests:
    """Decide which `demotions` to apply and what to say about their prices.

    A demotion from a report is applied when it prices `free`; `costly` ones need
    `policy.accept_cost`, `unknown` ones `policy.accept_unknown` (a skipped demotion costs one
    compile that the warm-up plan takes off the request path; a wrong one can cost 4x forever).
    `--param` is the user's explicit choice and always applied, its price said when one is known.
    `entries`: the report's kernel entries by name (empty without a report). `pricer` computes a
    price the report lacks; None (Triton missing) makes such demotions `unknown`, saying why.
    `files` (those `fix` edits), `price_from`, `data_dirs`: where kernels are loaded from, see
    `compiling_pricer`. `on_compile` is called before the first compile.
    """
    if pricer is None and triton_importable():
        pricer = _lazy(lambda: compiling_pricer(price_from, data_dirs, edited_module_files(entries, files)),
                       on_compile)
    prices = _Prices(entries, pricer, "not priced: Triton is not installed (pip install 'jitguard[monitor]')")
    result = PricedRequests()
    said: set[tuple[str, str, str]] = set()
    unrecorded: list[Demotion] = []
    for demotion in demotions:
        if demotion.option.startswith("bucket:"):  # an autotune migration: no codegen to price
            result.apply.append(demotion)
            continue
        key = (demotion.kernel, demotion.param, demotion.option)
        first = key not in said
        said.add(key)
        if demotion.origin == "--param":
            result.apply.append(demotion)
            if first and prices.entry(demotion) is not None:  # without a report there is no price to say
                result.lines.append(f"--param {_label(demotion)}: {_describe(prices.of(demotion))}")
            continue
        price = prices.of(demotion)
        if price.verdict == "unknown" and price.detail == NO_VARIANT and not entries:
            unrecorded.append(demotion)  # a scan JSON: one reason for all, said once below
            (result.apply if policy.accept_unknown else result.held).append(demotion)
            continue
        (result.apply if _accepted(price, policy) else result.held).append(demotion)
        if first:
            _say_price(result, demotion, price, policy)
    _say_unrecorded(result, unrecorded, policy)
    return result


def _accepted(price: Price, policy: PricePolicy) -> bool:
    return (price.verdict == "free" or (price.verdict == "costly" and policy.accept_cost)
            or (price.verdict == "unknown" and policy.accept_unknown))


def _say_price(result: PricedRequests, demotion: Demotion, price: Price, policy: PricePolicy) -> None:
    """One line for a report's demotion that is not plainly free, and the skip counts."""
    label = _label(demotion)
    if price.verdict == "costly" and policy.accept_cost:
        result.lines.append(f"accepted cost: {label}: costly: {price.detail}")
    elif price.verdict == "costly":
        result.skipped += 1
        instead = f"; instead: {price.alternative}" if price.alternative else ""
        result.lines.append(f"skipped: {label}: costly: {price.detail}{instead} (--accept-cost applies it)")
    elif price.verdict == "unknown" and policy.accept_unknown:
        result.lines.append(f"accepted unknown price: {label}: {price.detail}; {policy.applied}")
    elif price.verdict == "unknown":
        result.skipped_unknown += 1
        result.lines.append(f"skipped: {label}: price unknown: {price.detail}; instead: {WARMUP_INSTEAD} "
                            "(--accept-unknown applies it)")


def _say_unrecorded(result: PricedRequests, unrecorded: Sequence[Demotion], policy: PricePolicy) -> None:
    """One line for the demotions of a report that records no variants (a scan JSON)."""
    labels = list(dict.fromkeys(_label(d) for d in unrecorded))
    if not labels:
        return
    kernels = len({d.kernel for d in unrecorded})
    shown = ", ".join(labels[:3]) + (", ..." if len(labels) > 3 else "")
    what = (f"{len(labels)} demotion{'s' if len(labels) != 1 else ''} "
            f"({'parameters' if len(labels) != 1 else 'parameter'} of {kernels} kernel{'s' if kernels != 1 else ''}: "
            f"{shown})")
    why = "this report records no variants; `jitguard report --json` on a watched run prices them"
    if policy.accept_unknown:
        result.lines.append(f"accepted unknown price: {what} {policy.applied} unpriced: {why}")
    else:
        result.skipped_unknown += len(labels)
        result.lines.append(f"skipped: {what} unpriced: {why} (--accept-unknown applies them)")


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
