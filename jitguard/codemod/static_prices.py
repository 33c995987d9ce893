"""Prices for the demotions a static scan advises, computed before `fix` applies any.

A scan records no variants, so each kernel's likely signatures are synthesized from its source
(`static_signatures`) and every demotion is compiled both ways in each (`jitguard.price.demotion_cost`,
offline sm_90): it is `free` only when it is free in every synthesized signature that compiles, `costly`
when any one pays, `unknown` (with the compiler's reason) when no signature can be built or compiled.
When a kernel's first signature does not compile, its pointers of unknown dtype are retyped
(`static_signatures.RETRY_ELEMENTS`, in turn) and the first typing that compiles is kept; the price says
which dtypes and constexpr values it assumed, and how many signatures did not compile. The price is put
where a priced runtime report keeps it (`params[NAME].cost` of the demotion's report entry), so `fix`
applies and skips scan demotions exactly as it does a report's.

The kernel's module is imported to compile it, as the price check of a report does
(`jitguard.replay.kernel_loading`): the files priced are the ones the user asked `fix` to edit.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jitguard.codemod.config_lists import ModuleScope
from jitguard.codemod.demotions import Demotion
from jitguard.codemod.files import SourceError, read_source
from jitguard.codemod.kernels import TritonKernel, find_kernels, parse_source
from jitguard.codemod.launch_sites import launch_facts
from jitguard.codemod.param_uses import HelperUses
from jitguard.codemod.scan import runtime_kinds
from jitguard.codemod.static_signatures import RETRY_ELEMENTS, Synthesized, synthesize

_WORST_FIRST = ("costly", "unknown", "free")


@dataclass
class _KernelSource:
    """One kernel of a file to fix, with its synthesized signatures and where its module is imported from."""

    kernel: TritonKernel
    file: str
    module: str
    root: str
    synthesized: Synthesized


def module_and_root(file: str) -> tuple[str, str]:
    """The dotted module name of `file` and the folder it is imported from: up through every folder
    holding an `__init__.py`; for a file outside any package, its path from the working directory when
    it lies there (namespace packages: `conch/kernels/ops.py` imports as `conch.kernels.ops`), else a
    top-level module of its own folder."""
    path = Path(os.path.realpath(file))
    parts = [path.stem] if path.name != "__init__.py" else []
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    cwd = Path(os.path.realpath(os.getcwd()))
    top = _topmost_package_under(folder, cwd)
    if top is not None:  # namespace folders inside a package (pkg/__init__.py, pkg/third_party/vllm/x.py)
        dotted = path.relative_to(top.parent).with_suffix("").parts
        if all(part.isidentifier() for part in dotted):
            return ".".join(dotted), str(top.parent)
    if len(parts) == 1 and cwd in path.parents:
        relative = path.relative_to(cwd).with_suffix("").parts
        if all(part.isidentifier() for part in relative):
            return ".".join(relative), str(cwd)
    return ".".join(parts), str(folder)


def _topmost_package_under(folder: Path, cwd: Path) -> Path | None:
    """The highest folder holding an `__init__.py` among `folder` and its parents below the working directory:
    the package a namespace folder inside it is imported through."""
    top = None
    for ancestor in (folder, *folder.parents):
        if cwd not in ancestor.parents:
            break
        if (ancestor / "__init__.py").is_file():
            top = ancestor
    return top


def _file_for(demotion: Demotion, files: Sequence[Path]) -> str | None:
    """The file among `files` a scan finding names (its path as scanned, or the longest matching tail)."""
    if demotion.file is None:
        return None
    wanted = Path(demotion.file)
    real = {os.path.realpath(f): f for f in files}
    if wanted.exists() and os.path.realpath(wanted) in real:
        return os.path.realpath(wanted)
    tails = [f for f in files if f.parts[-len(wanted.parts):] == wanted.parts]
    return os.path.realpath(tails[0]) if len(tails) == 1 else None


def _kernel_sources(file: str) -> list[_KernelSource]:
    source = read_source(Path(file))
    tree = parse_source(source)
    kernels = find_kernels(source, tree)
    launches = launch_facts(tree, {name: [p.name for p in kernel.params]
                                   for kernel in kernels for name in (kernel.name, *kernel.bound_as)}, source)
    module, root = module_and_root(file)
    scope = ModuleScope(tree, Path(file))
    helpers = HelperUses({kernel.name: kernel for kernel in reversed(kernels)})  # a pointer used in a helper
    found = []
    for kernel in kernels:
        facts = next((launches[n] for n in (kernel.name, *kernel.bound_as) if n in launches), None)
        kinds = runtime_kinds(kernel, helpers, facts)
        found.append(_KernelSource(kernel, file, module, root, synthesize(kernel, facts, kinds, scope=scope)))
    return found


class _Sources:
    """Each file's kernels, read once."""

    def __init__(self) -> None:
        self._files: dict[str, list[_KernelSource] | str] = {}

    def find_defined(self, file: str, qualname: str, line: int) -> _KernelSource | str:
        """The kernel of `file` named `qualname` whose definition starts at `line`, or why there is none."""
        found = self._read(file)
        if isinstance(found, str):
            return found
        named = [k for k in found if k.kernel.qualname == qualname]
        at_line = [k for k in named if k.kernel.first_line == line]
        chosen = at_line or named
        return chosen[0] if chosen else f"{file} defines no kernel `{qualname}`"

    def _read(self, file: str) -> list[_KernelSource] | str:
        if file not in self._files:
            try:
                self._files[file] = _kernel_sources(file)
            except (SourceError, SyntaxError, ValueError, RecursionError) as exc:
                self._files[file] = f"{file}: cannot read: {exc}"
        return self._files[file]

    def find(self, file: str, demotion: Demotion) -> _KernelSource | str:
        found = self._read(file)
        if isinstance(found, str):
            return found
        matching = [k for k in found if k.kernel.matches(demotion.kernel)]
        if demotion.line is not None and len(matching) > 1:
            matching = [k for k in matching if k.kernel.first_line <= demotion.line <= k.kernel.end_line] or matching
        return matching[0] if matching else f"{file} defines no kernel `{demotion.kernel}`"


def _signature_words(group: list[dict[str, Any]]) -> str:
    base = group[0]
    constexprs = [f"{n}={e['value']}" for n, e in base["params"].items() if e["kind"] == "constexpr"]
    options = [f"{k}={v}" for k, v in base["options"].items()]
    return ", ".join(constexprs + options) or "its only configuration"


class StaticPricer:
    """Prices scan demotions by compiling each kernel in its synthesized signatures (one checker, one cache)."""

    def __init__(self, price_from: Sequence[str] = ()) -> None:
        self.price_from = tuple(price_from)
        self._checker: Any = None
        self._kernels: dict[tuple[str, str], Any] = {}
        self._types: dict[tuple[str, str], Synthesized] = {}

    def _jit_function(self, source: _KernelSource) -> Any:
        from jitguard.replay.kernel_loading import KernelTrust, load_jit_function

        key = (source.file, source.kernel.qualname)
        if key not in self._kernels:
            trust = KernelTrust(extra_roots=self.price_from, named_files=(source.file,), naming_roots=(source.root,))
            qualname = source.kernel.bound_as[0] if source.kernel.bound_as else source.kernel.qualname
            self._kernels[key] = load_jit_function(source.module, source.file, qualname, source.kernel.name, trust)
        return self._kernels[key]

    def price(self, source: _KernelSource, param: str, option: str) -> dict[str, str]:
        """The `cost` record ({"verdict", "detail"[, "alternative"]}) of one demotion: the worst verdict over
        the synthesized signatures that compile (`unknown` with the compiler's reason when none does)."""
        from jitguard.price.demotion_cost import DemotionCost, DemotionCostChecker

        if source.synthesized.reason is not None:
            return DemotionCost("unknown", f"no signature synthesized for {source.kernel.name}: "
                                           f"{source.synthesized.reason}").to_json()
        if self._checker is None:
            self._checker = DemotionCostChecker()
        try:
            jit_fn = self._jit_function(source)
        except LookupError as exc:
            return DemotionCost("unknown", str(exc)).to_json()
        synthesized = self._compiling_types(source, jit_fn, param, option)
        costs = [(self._checker.cost(jit_fn, param, option, signature=group), group) for group in synthesized.groups]
        compiled = [item for item in costs if not _signature_failed(item[0].detail)]
        worst, group = min(compiled or costs, key=lambda item: _WORST_FIRST.index(item[0].verdict))
        failed = len(costs) - len(compiled)
        detail = self._detail(worst.verdict, worst.detail, group, synthesized, len(compiled) or len(costs))
        if compiled and failed:
            failure = next(cost.detail for cost, _ in costs if _signature_failed(cost.detail))
            detail += f"; {failed} of {len(costs)} synthesized signatures did not compile ({failure[:160]})"
        return replace(worst, detail=detail).to_json()

    def _compiling_types(self, source: _KernelSource, jit_fn: Any, param: str, option: str) -> Synthesized:
        """`source.synthesized`, or the same signatures with the pointers of unknown dtype retyped
        (`RETRY_ELEMENTS`, in turn) when its first signature does not compile; chosen once per kernel."""
        key = (source.file, source.kernel.qualname)
        if key not in self._types:
            chosen = source.synthesized
            if chosen.assumed and chosen.groups:
                for element in ("", *RETRY_ELEMENTS):
                    candidate = chosen.retyped(element) if element else chosen
                    probe = self._checker.cost(jit_fn, param, option, signature=candidate.groups[0][:1])
                    if not _signature_failed(probe.detail):
                        chosen = candidate
                        break
            self._types[key] = chosen
        return self._types[key]

    @staticmethod
    def _detail(verdict: str, detail: str, group: list[dict[str, Any]], synthesized: Synthesized,
                priced: int) -> str:
        capped = f" (of {synthesized.configs_total} configurations)" if synthesized.configs_total > priced else ""
        taken = [f"{element}: {', '.join(names)}" for element, names in synthesized.assumed_types().items()]
        assumed = f"; pointer dtypes not in the source taken as {'; as '.join(taken)}" if taken else ""
        if synthesized.assumed_constexprs:
            unread = "its autotune configs could not be read from the source, so " if synthesized.configs_unread else ""
            assumed += (f"; {unread}constexprs with no value in the source assumed from their use: "
                        f"{', '.join(synthesized.assumed_constexprs)}")
        if verdict == "free":
            where = "the synthesized signature" if priced == 1 else f"all {priced} synthesized signatures{capped}"
            return f"free in {where}: {detail}{assumed}"
        return f"{detail} (synthesized signature {_signature_words(group)}, {priced} priced{capped}){assumed}"


_SIGNATURE_FAILED = re.compile(r"could not compile \S+ with \S+ specialized: ")


def _signature_failed(detail: str) -> bool:
    """True when the price says the synthesized signature itself did not compile (before any demotion)."""
    return _SIGNATURE_FAILED.match(detail) is not None


def price_scan_demotions(demotions: Sequence[Demotion], files: Sequence[Path], price_from: Sequence[str] = (),
                         on_compile: Callable[[], None] | None = None, jobs: int = 1,
                         on_priced: Callable[[str, int, int, int, float], None] | None = None) -> list[Demotion]:
    """The scan's demotions, each carrying a report entry with its price (`params[NAME].cost`), as a priced
    runtime report's do. Autotune buckets (no code to price) and demotions of kernels not found among
    `files` are returned as they are.

    Kernels are priced on `jobs` worker processes when there are several (each compile takes seconds);
    `on_priced(kernel, done, total, demotions, seconds)` is called as each kernel's prices arrive."""
    from jitguard.codemod.demotion_prices import triton_importable

    sources = _Sources()
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    wanted: dict[tuple[str, str], list[tuple[str, str]]] = {}
    first_lines: dict[tuple[str, str], int] = {}
    priced = []
    for demotion in demotions:
        file = _file_for(demotion, files)
        if demotion.option.startswith("bucket:") or demotion.origin == "--param" or file is None:
            priced.append(demotion)
            continue
        found = sources.find(file, demotion)
        if isinstance(found, str):
            priced.append(demotion)
            continue
        key = (file, found.kernel.qualname)
        first_lines.setdefault(key, found.kernel.first_line)
        entry = entries.setdefault(key, {
            "name": found.kernel.name, "qualname": found.kernel.qualname, "module": found.module, "file": file,
            "line": found.kernel.line, "params": {}, "variant_list": []})
        if demotion.param not in entry["params"]:
            entry["params"][demotion.param] = {"advice": demotion.advice, "cost": None}
            wanted.setdefault(key, []).append((demotion.param, demotion.option))
        priced.append(replace(demotion, report_entry=entry))
    if wanted and not triton_importable():
        costs = {key: {param: NO_TRITON for param, _ in params} for key, params in wanted.items()}
    elif wanted:
        if on_compile is not None:
            on_compile()
        tasks = {key: (key[0], key[1], first_lines[key], params, tuple(price_from)) for key, params in wanted.items()}
        costs = _price_kernels(tasks, jobs, on_priced, sources)
    for key, params in wanted.items():
        for param, _ in params:
            entries[key]["params"][param]["cost"] = costs[key][param]
    return priced


NO_TRITON = {"verdict": "unknown", "detail": "not priced: Triton is not installed (pip install 'jitguard[monitor]')"}

# file, qualname, first line, (param, option) of each demotion, price_from
_KernelJob = tuple[str, str, int, list[tuple[str, str]], tuple[str, ...]]


def price_kernel_job(job: _KernelJob, sources: _Sources | None = None) -> tuple[dict[str, dict[str, str]], float]:
    """The prices of one kernel's demotions, {param: cost}, and the seconds they took: the work of one pool
    task (module-level, so it pickles; a worker finds the kernel again by reading its file, one process
    in the `sources` it has read already)."""
    file, qualname, line, params, price_from = job
    started = time.perf_counter()
    found = (sources or _Sources()).find_defined(file, qualname, line)
    if isinstance(found, str):
        return {param: {"verdict": "unknown", "detail": found} for param, _ in params}, 0.0
    pricer = StaticPricer(price_from)
    costs = {param: pricer.price(found, param, option) for param, option in params}
    return costs, time.perf_counter() - started


def _quiet_half_built_kernels() -> None:
    """In a pricing worker: a signature that fails to compile can leave a Triton `CompiledKernel` whose
    `__init__` never ran to the end, and its `__del__` then raises AttributeError when the worker exits;
    that one message is noise about a compile the price already reports, so it is not printed."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        where = getattr(unraisable.object, "__qualname__", "")
        if not (where == "CompiledKernel.__del__" and isinstance(unraisable.exc_value, AttributeError)):
            previous(unraisable)

    sys.unraisablehook = hook


def _price_kernels(tasks: dict[tuple[str, str], _KernelJob], jobs: int,
                   on_priced: Callable[[str, int, int, int, float], None] | None, sources: _Sources
                   ) -> dict[tuple[str, str], dict[str, dict[str, str]]]:
    costs: dict[tuple[str, str], dict[str, dict[str, str]]] = {}

    def arrived(key: tuple[str, str], result: tuple[dict[str, dict[str, str]], float]) -> None:
        costs[key] = result[0]
        if on_priced is not None:
            on_priced(key[1], len(costs), len(tasks), len(tasks[key][3]), result[1])

    workers = min(jobs, len(tasks))
    if workers <= 1:
        for key, task in tasks.items():
            arrived(key, price_kernel_job(task, sources))
        return costs
    # spawn: a fresh interpreter per worker, never a fork of a process that may hold torch's threads
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_quiet_half_built_kernels) as pool:
        futures = {pool.submit(price_kernel_job, task): key for key, task in tasks.items()}
        for future in as_completed(futures):
            key = futures[future]
            try:
                arrived(key, future.result())
            except Exception as exc:  # a worker that died prices its kernel unknown, with why
                reason = f"the price check of {key[1]} failed in its worker: {type(exc).__name__}: {exc}"[:240]
                arrived(key, ({param: {"verdict": "unknown", "detail": reason} for param, _ in tasks[key][3]}, 0.0))
    return costs
