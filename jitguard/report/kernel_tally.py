"""One kernel's report entry, folded from its compile events as they are read (never all held at once).

`KernelTally.add(event, process, rank)` takes one compile; `entry()` gives the JSON-ready dict of
`jitguard report --json`. Memory grows with the kernel's processes, parameters, causes and distinct
variants, not with its compile records. `rank` orders events as the report lists them (processes by
start, then file order), so the entry is the same whatever order the files were read in.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jitguard.events import CompileEvent, ParamSpec
from jitguard.explain import fix_for_advice, strongest_advice
from jitguard.report.event_logs import ProcessLog

PHASES = ("warmup", "serving")
ARRIVAL_ORDER = ("cold", "disk", "bundle", "remote", "worker", "unknown")  # how a compile event's kernel arrived

# (process start or inf, pid, order the process was read, order the event was read)
Rank = tuple[float, int, int, int]


def spec_words(spec: ParamSpec) -> str:
    """A parameter's specialization in a few words: 'i32 div16', '*fp32 aligned16', 'constexpr 64'."""
    if spec.kind == "constexpr":
        return f"constexpr {spec.value!r}"
    if spec.kind == "none":
        return "None"
    parts = [spec.type or spec.kind]
    if spec.spec:
        parts.append(spec.spec)
    return " ".join(parts)


def process_label(process: ProcessLog) -> dict[str, Any]:
    """How a report names a process: host, node (the host unless JITGUARD_NODE named one), pid, role, rank."""
    return {"host": process.host, "node": process.node or process.host, "pid": process.pid, "role": process.role,
            "rank": process.rank}


@dataclass
class _ParamTally:
    specs_seen: dict[str, Rank] = field(default_factory=dict)  # words -> first rank
    real_rank: Rank | None = None  # first event naming it as a parameter (else it is a launch option)
    cause_rank: Rank | None = None
    recompiles_caused: int = 0
    advice_codes: set[str | None] = field(default_factory=set)
    took_value_one: bool = False


@dataclass
class _ProcessSlot:
    process: ProcessLog
    rank: Rank
    compiles: int = 0
    compile_ms: float = 0.0
    # Bit i set: this process compiled the kernel's variant number i (KernelTally.key_ids). A bit per
    # variant, where a set of ids cost a slot per compile record.
    key_bits: bytearray = field(default_factory=bytearray)

    def add_key(self, index: int) -> None:
        byte, bit = divmod(index, 8)
        if byte >= len(self.key_bits):
            self.key_bits.extend(bytes(byte + 1 - len(self.key_bits)))
        self.key_bits[byte] |= 1 << bit

    @property
    def variants(self) -> int:
        return int.from_bytes(self.key_bits, "little").bit_count()


class _InductorTally:
    """What torch said about an Inductor kernel across its events: ops, graph compiles, recompile reasons."""

    def __init__(self) -> None:
        self.ops: dict[str, None] = {}
        self.compile_ids: dict[str, None] = {}
        self.recompile_reasons: dict[str, None] = {}

    def add(self, facts: dict[str, Any]) -> None:
        self.ops.update(dict.fromkeys(facts.get("ops") or []))
        if facts.get("compile_id"):
            self.compile_ids[facts["compile_id"]] = None
        if facts.get("recompile_reason"):
            self.recompile_reasons[facts["recompile_reason"]] = None

    def entry(self) -> dict[str, list[str]] | None:
        if not (self.ops or self.compile_ids or self.recompile_reasons):
            return None
        return {"ops": list(self.ops), "compile_ids": list(self.compile_ids),
                "recompile_reasons": list(self.recompile_reasons)}


class KernelTally:
    """Everything the report says about one kernel (name, binding, file), added one event at a time."""

    def __init__(self, name: str, binding: str, file: str) -> None:
        self.name, self.binding, self.file = name, binding, file
        self.first: tuple[Rank, str, int] | None = None  # (rank, module, line) of the first event
        self.compiles = self.recompiles = 0
        self.total_ms = 0.0
        self.phases: dict[str, tuple[Rank, list[float]]] = {}  # phase -> (first rank, [compiles, ms])
        self.slots: dict[tuple[str, int], _ProcessSlot] = {}
        self.params: dict[str, _ParamTally] = {}
        self.causes: dict[tuple, tuple[Rank, dict[str, Any]]] = {}
        self.key_ids: dict[str, int] = {}
        self.variants: dict[str, tuple[Rank, dict[str, Any]]] = {}
        self.params_seen: dict[str, tuple[dict[str, ParamSpec], Rank]] = {}
        self.arrivals: dict[str, list[float]] = {}  # "cold" | "disk" | "bundle" | "remote" | "unknown" -> [count, ms]
        self.cache_misses: dict[tuple[str, ...], int] = {}  # what differed from the cached entries -> cold compiles
        self.origin = "jit"  # the first event's (one kernel has one maker)
        self.inductor = _InductorTally()

    def add(self, event: CompileEvent, process: ProcessLog, rank: Rank) -> None:
        """Count one compile of this kernel by `process`."""
        if self.first is None or rank < self.first[0]:
            self.first = (rank, event.module, event.line)
            self.origin = event.origin
        if event.inductor:
            self.inductor.add(event.inductor)
        ms = event.compile_ms or 0.0
        self.compiles += 1
        self.recompiles += event.is_recompile
        self.total_ms += ms
        phase = self.phases.get(event.phase)
        if phase is None or rank < phase[0]:
            phase = self.phases[event.phase] = (rank, phase[1] if phase else [0, 0.0])
        phase[1][0] += 1
        phase[1][1] += ms
        arrival = self.arrivals.setdefault(event.arrived or "unknown", [0, 0.0])
        arrival[0] += 1
        arrival[1] += ms
        if event.cache_miss:
            differs = tuple(event.cache_miss.get("differs") or ())
            self.cache_misses[differs] = self.cache_misses.get(differs, 0) + 1
        self._add_to_process(event, process, rank, ms)
        self._add_params(event, rank)
        self._add_causes(event, rank)
        self._add_variant(event, rank)

    def _add_to_process(self, event: CompileEvent, process: ProcessLog, rank: Rank, ms: float) -> None:
        slot_key = (process.node or process.host, process.pid)
        slot = self.slots.get(slot_key)
        if slot is None:
            slot = self.slots[slot_key] = _ProcessSlot(process, rank)
        elif rank < slot.rank:  # two logs of one host and pid: the first to start names the row
            slot.process, slot.rank = process, rank
        slot.compiles += 1
        slot.compile_ms = round(slot.compile_ms + ms, 3)
        slot.add_key(self.key_ids.setdefault(event.key, len(self.key_ids)))

    def _add_params(self, event: CompileEvent, rank: Rank) -> None:
        # Events read through one ParamsMemo share the params of a repeated variant: one seen before
        # at an earlier rank adds nothing (every tally here is a first rank or an "any").
        # One entry per variant key, so memory follows variants even when every record's params differ
        # (the values a call passed are recorded with them).
        seen = self.params_seen.get(event.key)
        if seen is not None and seen[0] is event.params and seen[1] <= rank:
            return
        self.params_seen[event.key] = (event.params, rank)
        for name, spec in event.params.items():
            tally = self.params.setdefault(name, _ParamTally())
            if tally.real_rank is None or rank < tally.real_rank:
                tally.real_rank = rank
            if spec.kind == "int" and spec.spec == "one":
                tally.took_value_one = True
            words = spec_words(spec)
            if words not in tally.specs_seen or rank < tally.specs_seen[words]:
                tally.specs_seen[words] = rank

    def _add_causes(self, event: CompileEvent, rank: Rank) -> None:
        counted: set[str] = set()
        for cause in event.causes:
            slot = (cause.param, cause.before, cause.after, cause.advice)
            known = self.causes.get(slot)
            if known is None or rank < known[0]:
                count = known[1]["count"] if known else 0
                known = self.causes[slot] = (rank, {"param": cause.param, "before": cause.before,
                                                    "after": cause.after, "advice": cause.advice,
                                                    "message": cause.message, "count": count})
            known[1]["count"] += 1
            # A launch option (num_warps, ...) is listed with the parameters so nothing is hidden;
            # "(none)" (no difference found) is not a parameter.
            if cause.param in counted or cause.param == "(none)":
                continue
            counted.add(cause.param)
            tally = self.params.setdefault(cause.param, _ParamTally())
            if tally.cause_rank is None or rank < tally.cause_rank:
                tally.cause_rank = rank
            tally.recompiles_caused += 1
            tally.advice_codes.add(cause.advice)

    def _add_variant(self, event: CompileEvent, rank: Rank) -> None:
        # Each distinct variant once, with its classes and options: enough for `jitguard warmup-plan`
        # to rebuild it from the report alone, after the logs are gone.
        known = self.variants.get(event.key)
        if known is None or rank < known[0]:
            self.variants[event.key] = (rank, {
                "key": event.key, "triton_version": event.triton_version,
                "params": {n: spec.to_dict() for n, spec in event.params.items()},
                "options": dict(event.options), "compile_ms": event.compile_ms})

    def _params_entry(self) -> dict[str, dict[str, Any]]:
        # Parameters first (in the order events named them), then launch options only causes named.
        def order(item: tuple[str, _ParamTally]) -> tuple:
            tally = item[1]
            return (0, tally.real_rank) if tally.real_rank is not None else (1, tally.cause_rank)

        params = {}
        for name, tally in sorted(self.params.items(), key=order):
            params[name] = {"specs_seen": sorted(tally.specs_seen, key=tally.specs_seen.__getitem__),
                            "recompiles_caused": tally.recompiles_caused,
                            "advice": strongest_advice(tally.advice_codes, took_value_one=tally.took_value_one)}
        return params

    def _by_phase(self) -> dict[str, dict[str, Any]]:
        by_phase = {phase: {"compiles": 0, "compile_ms": 0.0} for phase in PHASES}
        for phase, (_, (compiles, ms)) in sorted(self.phases.items(), key=lambda item: item[1][0]):
            by_phase[phase] = {"compiles": int(compiles), "compile_ms": round(ms, 3)}
        return by_phase

    def _by_process(self) -> list[dict[str, Any]]:
        rows = []
        for slot in sorted(self.slots.values(), key=lambda s: s.rank):
            rows.append(dict(process_label(slot.process), compiles=slot.compiles, compile_ms=slot.compile_ms,
                             variants=slot.variants))
        return sorted(rows, key=lambda p: (p["rank"] is None, p["rank"] or 0, p["pid"]))

    def entry(self) -> dict[str, Any]:
        """The kernel's entry in the report (see DESIGN.md: `jitguard report --json`)."""
        assert self.first is not None, "an entry needs at least one event"
        params = self._params_entry()
        causes = sorted(self.causes.values(), key=lambda known: (-known[1]["count"], known[0]))
        return {
            "name": self.name,
            "binding": self.binding,  # the module-level name the program calls it by, when not `name`; else ""
            "module": self.first[1],
            "file": self.file,
            "line": self.first[2],
            "variants": len(self.variants),
            "compiles": self.compiles,
            "recompiles": self.recompiles,
            "compile_ms": round(self.total_ms, 3),
            "by_phase": self._by_phase(),
            # How the compiles arrived: compiled cold, or loaded from disk, a bundle, the remote cache
            # ("unknown": a Triton that cannot tell), each with its count and milliseconds.
            "arrivals": {name: {"count": int(self.arrivals[name][0]), "ms": round(self.arrivals[name][1], 3)}
                         for name in ARRIVAL_ORDER if name in self.arrivals},
            # Cold compiles of variants the cache held under another key, by what differed (runtime/cache_miss.py).
            "cache_misses": [{"count": count, "differs": list(differs)}
                             for differs, count in self.cache_misses.items()],
            "by_process": self._by_process(),
            "params": params,
            "causes": [cause for _, cause in causes],
            # One fix per parameter, from its strongest advice across every process.
            "fix": fix_for_advice({param: entry["advice"] for param, entry in params.items()}) or None,
            "fix_costly": None,  # the costly part of the fix, once priced (price.demotion_cost.add_costs_to_report)
            "variant_list": [entry for _, entry in sorted(self.variants.values(), key=lambda known: known[0])],
            "origin": self.origin,
            "inductor": self.inductor.entry(),
        }
