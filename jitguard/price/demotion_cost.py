"""What a demotion costs: compile a kernel with and without it and compare the generated code.

Triton specializes an int on `== 1` and `% 16 == 0` and a pointer on 16-byte alignment because the
code can use it: an int divisible by 16 that bounds a mask over contiguous offsets lets the compiler
emit 128-bit loads and stores. `do_not_specialize` removes the variants and the hint with them. This
module compiles the kernel offline (sm_90 by default, the real compiler, `jitguard.offline()`) for a
recorded variant, once as it is and once with the demotion, and compares global load/store widths,
tensor-core and TMA use, instruction count, registers and spills (see `jitguard.price.ptx_facts`).

    >>> from jitguard.price.demotion_cost import DemotionCostChecker            # doctest: +SKIP
    >>> checker = DemotionCostChecker()                                      # one per report: it caches
    >>> cost = checker.cost("mypkg.ops:add_kernel", "n_elements", "do_not_specialize",
    ...                     signature=report_kernel["variant_list"])
    >>> cost.verdict, cost.detail
    ('costly', '2 of 2 128-bit loads become 32-bit (2 -> 8 loads); 2 of 2 128-bit stores become 32-bit
    (2 -> 8 stores) for n_elements % 16 == 0')
    >>> cost.alternative
    'keep the specialization and cover its classes (== 1, % 16 == 0, other) in the warm-up plan: ...'

Verdicts: `free` (no difference that matters), `costly` (a one-line price), `unknown` (both could
not be compiled; the detail says why). Compiling takes 0.1-0.5 s per variant for small kernels,
and it swaps Triton's active driver process-wide for the duration and fires Triton's JIT hooks on
the copies it compiles (marked with `COST_PROBE_ATTRIBUTE`). So call it from the report, `fix` or
`scan`; a process that launches GPU work (a pytest run, a server) uses `cost_in_subprocess`;
never a request path. A report's kernels are loaded by `jitguard.replay.kernel_loading` (only from
this environment's import roots, only a file that defines that kernel, never from the folder being
read); a script's kernels (`__main__`) are never executed to find them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jitguard.events import CODEGEN_OPTIONS, COST_PROBE_ATTRIBUTE, variant_dict
from jitguard.explain import SPEC_CLASS_WORDS
from jitguard.price.ptx_facts import (
    DEFAULT_NUM_WARPS,
    CodeFacts,
    code_facts,
    compare_facts,
    likely_impact,
    param_uses,
)
from jitguard.replay.kernel_loading import KernelTrust, load_jit_function

DEMOTIONS = ("do_not_specialize", "do_not_specialize_on_alignment")
"""Set (True) on the JITFunction copies this module compiles: Triton's JIT hooks see them (as manual
warm-ups on the offline device), and a monitor can skip them by this attribute."""
VERDICTS = ("free", "costly", "unknown")

# Which specialization classes each demotion takes away (see FACTS.md section 1).
_CLASSES_REMOVED = {
    "do_not_specialize": {"one", "div16", "aligned16"},
    "do_not_specialize_on_alignment": {"div16", "aligned16"},
}

ALTERNATIVE_ON_ALIGNMENT = ("do_not_specialize_on_alignment: it keeps the `== 1` variant whose code the full "
                            "demotion slows, and still merges `% 16 == 0` with other (2 variants, not 3)")
ALTERNATIVE_PAD = ("pad {param} to a multiple of 16 at the call site (e.g. allocate rows with a padded pitch): "
                   "it is used in addressing, and with every value % 16 == 0 one variant keeps the wide accesses")
ALTERNATIVE_ALIGNED_POINTER = ("keep the alignment specialization: a pointer has 2 classes (16-byte aligned or "
                               "not); cover both in the warm-up plan, or have the caller pass aligned buffers")
ALTERNATIVE_WARMUP = ("keep the specialization and cover its classes (== 1, % 16 == 0, other) in the warm-up "
                      "plan: at most 3 variants, compiled before serving, and the fast code stays")


@dataclass(frozen=True)
class DemotionCost:
    """The verdict on one demotion of one parameter.

    `detail` is one line: the price when costly, the reason when unknown. `alternative` (costly only)
    is one line: what to do instead and why. `facts_before` / `facts_after` are the compared code
    facts of the variant that decided the verdict (None when nothing was compiled).
    """

    verdict: str
    detail: str
    alternative: str | None = None
    facts_before: CodeFacts | None = None
    facts_after: CodeFacts | None = None
    likely: str | None = None  # costly only: "large" (the hot accesses pay) or "small" (a base address once)

    def to_json(self) -> dict[str, str]:
        """The report JSON's `kernels[].params[NAME].cost`: {"verdict", "detail"} (+ "alternative",
        + "likely" for a costly one: "large" | "small", see `ptx_facts.likely_impact`)."""
        data = {"verdict": self.verdict, "detail": self.detail}
        if self.alternative:
            data["alternative"] = self.alternative
        if self.likely:
            data["likely"] = self.likely
        return data


def _unknown(detail: str) -> DemotionCost:
    return DemotionCost("unknown", detail)


# --- finding the kernel (import by module name only) ----------------------------------------------

def kernel_by_name(module: str, name: str) -> Any:
    """The JITFunction `name` (a qualname, `a.b` allowed) of module `module`, loaded by
    `jitguard.replay.kernel_loading` (the module already imported, else its file, checked by parsing
    to define that kernel, imported under its import root; a parent `__init__` that fails is skipped).

    For a kernel a user or a test process names itself: no import-root check. Raises LookupError
    with one line naming the kernel and module. A kernel of a script run as `__main__` is not looked
    for: that would run the script.
    """
    if not module or module == "__main__":
        raise LookupError(f"kernel {name!r} is defined in a script run as __main__: jitguard imports kernels "
                          "by module name and never runs scripts")
    return load_jit_function(module, "", name, name, KernelTrust(check_roots=False))


def _resolve(kernel: Any) -> Any:
    from jitguard import triton_compat

    if isinstance(kernel, str):
        module, _, name = kernel.partition(":")
        return kernel_by_name(module, name)
    jit_fn = triton_compat.unwrap_jit_function(kernel)
    if jit_fn is None:
        raise LookupError(f"{kernel!r} is not a Triton kernel")
    return jit_fn


# --- signatures ------------------------------------------------------------------------------------

def _int_class(value: int) -> tuple[str, str]:
    kind = "i32" if -2**31 <= value < 2**31 else "i64" if -2**63 <= value < 2**63 else "u64"
    spec = "one" if value == 1 else "div16" if value % 16 == 0 else "plain"
    return kind, spec


def signature_from_call(kernel: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The variant a call `kernel[grid](*args, **kwargs)` would compile, as the report records it.

    For tests, benchmarks and `scan`: {"params": {name: {"kind", "type", "spec", "value"}},
    "options": {num_warps, num_stages, ...}}. Tensors need only `.dtype` and `.data_ptr()`.
    """
    from jitguard.replay.arguments import TORCH_DTYPE_NAMES
    from jitguard.triton_compat import constexpr_json

    jit_fn = _resolve(kernel)
    options = {k: kwargs.pop(k) for k in CODEGEN_OPTIONS if k in kwargs}
    bound = inspect.signature(jit_fn.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    triton_names = {torch_name: short for short, torch_name in TORCH_DTYPE_NAMES.items()}
    triton_names["bool"] = "i1"
    params: dict[str, Any] = {}
    for param in jit_fn.params:
        value = bound.arguments[param.name]
        if param.is_constexpr:
            params[param.name] = {"kind": "constexpr", "type": "constexpr", "spec": None,
                                  "value": constexpr_json(value)}
        elif value is None:
            params[param.name] = {"kind": "none", "type": "constexpr", "spec": None}
        elif isinstance(value, bool):
            params[param.name] = {"kind": "bool", "type": "u1", "spec": None}
        elif isinstance(value, int):
            ty, spec = _int_class(value)
            params[param.name] = {"kind": "int", "type": ty, "spec": spec}
        elif isinstance(value, float):
            params[param.name] = {"kind": "float", "type": "fp32", "spec": None}
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            dtype = str(value.dtype).replace("torch.", "")
            params[param.name] = {"kind": "ptr", "type": "*" + triton_names.get(dtype, dtype), "spec":
                                  "aligned16" if value.data_ptr() % 16 == 0 else "unaligned", "dtype": dtype}
        else:
            params[param.name] = {"kind": type(value).__name__, "type": None, "spec": None}
    return {"params": params, "options": options}


def _variant_dicts(signature: Any) -> list[dict[str, Any]]:
    """`variant_dict` of each variant of `signature`: one variant, a list of them, or None (none)."""
    items = signature if isinstance(signature, (list, tuple)) else [signature] if signature is not None else []
    return [variant_dict(item) for item in items]


def _as_if_specialized(variant: dict[str, Any], param: str) -> dict[str, Any]:
    """A variant recorded with `param` already demoted ("off"), with the class its observed value
    would have had: what the existing demotion is judged on."""
    entry = dict(variant["params"][param])
    observed = entry.get("observed")
    if entry.get("kind") == "int" and isinstance(observed, int) and not isinstance(observed, bool):
        ty, entry["spec"] = _int_class(observed)
        entry["type"] = entry.get("type") or ty
    elif entry.get("kind") == "ptr" and isinstance(observed, dict) and isinstance(observed.get("align"), int):
        entry["spec"] = "aligned16" if observed["align"] == 0 else "unaligned"
    return {"params": dict(variant["params"], **{param: entry}), "options": variant["options"]}


def _describe_variant(variant: dict[str, Any], param: str) -> str:
    spec = variant["params"][param].get("spec")
    return f"{param} {SPEC_CLASS_WORDS.get(spec, spec or variant['params'][param].get('kind'))}"


# --- compiling (Triton internals through triton_compat) ------------------------------------------

def _copy_with(jit_fn: Any, param: str, demotion: str | None) -> Any:
    """A new JITFunction over the same Python function: `param` specialized (taken out of the
    kernel's own demotion lists) when `demotion` is None, else added to `demotion`. Marked with
    `COST_PROBE_ATTRIBUTE`, so the monitor does not count its compiles."""
    from jitguard.price.kernel_copy import jit_function_copy

    lists = _demotion_lists(jit_fn, param, demotion)
    copy = jit_function_copy(jit_fn, list(lists[0]), list(lists[1]))
    setattr(copy, COST_PROBE_ATTRIBUTE, True)
    return copy


def _demotion_lists(jit_fn: Any, param: str, demotion: str | None) -> tuple[tuple, tuple]:
    """(do_not_specialize, do_not_specialize_on_alignment) of the copy `_copy_with` makes."""
    from jitguard import triton_compat

    index = triton_compat.param_names(jit_fn).index(param)
    declared = dict(zip(DEMOTIONS, triton_compat.demotion_lists(jit_fn)))
    lists = []
    for name in DEMOTIONS:
        kept = [v for v in declared[name] if v not in (param, index)]
        lists.append(tuple(kept + [param]) if name == demotion else tuple(kept))
    return lists[0], lists[1]


def _cubin_usage(cubin: bytes) -> tuple[int, int] | None:
    """(registers, local bytes) from `cuobjdump -res-usage`; None when it is missing or fails."""
    from jitguard.price.ptx_facts import resource_usage
    from jitguard.triton_compat import cuobjdump_path

    tool = cuobjdump_path()
    if tool is None or not cubin:
        return None
    try:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
            handle.write(cubin)
            handle.flush()
            result = subprocess.run([tool, "-res-usage", handle.name], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return resource_usage(result.stdout) if result.returncode == 0 else None


def _codegen_options(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: options[k] for k in CODEGEN_OPTIONS if options.get(k) is not None}


def _num_warps(variant: dict[str, Any]) -> int:
    """The recorded variant's warps per program (Triton's default when it recorded none)."""
    warps = variant["options"].get("num_warps")
    return warps if isinstance(warps, int) and not isinstance(warps, bool) and warps > 0 else DEFAULT_NUM_WARPS


def _runtime_args(variant: dict[str, Any], names: list[str], demoted: str | None, demotion: str) -> list[str]:
    """The parameters that stay kernel arguments (not constants): how old Triton numbers TTIR args."""
    kept = []
    for name in names:
        entry = variant["params"][name]
        if entry.get("kind") in ("constexpr", "none"):
            continue
        if entry.get("spec") == "one" and not (name == demoted and demotion == "do_not_specialize"):
            continue
        kept.append(name)
    return kept


# --- the check --------------------------------------------------------------------------------------

class DemotionCostChecker:
    """Judges demotions, compiling each (kernel, variant, demotion) once: keep one per report or run.

    `arch`: the CUDA arch to compile for (90: H100/H200).
    """

    def __init__(self, arch: int = 90, trust: KernelTrust | None = None) -> None:
        self.arch = arch
        # Where a report's kernels may be imported from (jitguard.replay.kernel_loading): logs are data.
        self.trust = trust or KernelTrust()
        self._facts: dict[tuple, CodeFacts | str] = {}  # compile key -> facts, or why it failed
        self._costs: dict[tuple, DemotionCost] = {}

    def cost(self, kernel: Any, param: str, demotion: str = "do_not_specialize",
             signature: Any = None) -> DemotionCost:
        """The verdict on adding `param` to `demotion` of `kernel` (a JITFunction, an autotune or
        heuristics wrapper, or "module:qualname").

        `signature`: one recorded variant (a report `variant_list` entry, a `CompileEvent`, or
        `signature_from_call(...)`) or a list of them: one variant per class of `param` is compiled
        and the worst verdict wins (costly, then unknown, then free). Never raises for bad input:
        an unknown verdict names the problem.
        """
        if demotion not in DEMOTIONS:
            return _unknown(f"demotion {demotion!r} is not one of {', '.join(DEMOTIONS)}")
        try:
            jit_fn = _resolve(kernel)
        except LookupError as exc:
            return _unknown(str(exc))
        variants = self._variants_to_check(signature, param)
        if isinstance(variants, str):
            return _unknown(variants)
        try:
            verdicts = [self._cost_of_variant(jit_fn, param, demotion, v) for v in variants]
        except Exception as exc:  # a report must get a verdict, never a traceback
            return _unknown(f"the cost check of {param} failed: {type(exc).__name__}: {exc}"[:240])
        for wanted in ("costly", "unknown"):
            chosen = [c for c in verdicts if c.verdict == wanted]
            if chosen:
                return chosen[0]
        compiled = [c for c in verdicts if c.facts_before is not None]
        return compiled[0] if compiled else verdicts[0]

    def cost_for_report_kernel(self, entry: Mapping[str, Any], param: str, demotion: str | None = None) -> DemotionCost:
        """`cost` for one `kernels[]` entry of the report JSON (its `module`, `name`, `variant_list`).

        `demotion` defaults to the decorator option the parameter's advice asks for.
        """
        from jitguard.events import OPTION_FOR_ADVICE

        if demotion is None:
            advice = ((entry.get("params") or {}).get(param) or {}).get("advice")
            demotion = OPTION_FOR_ADVICE.get(advice or "") if advice else None
            if demotion is None:
                return _unknown(f"{entry.get('name')}.{param}: its advice ({advice}) is not a demotion")
        try:
            name = entry.get("qualname") or entry.get("binding") or entry.get("name") or ""
            jit_fn = load_jit_function(str(entry.get("module") or ""), str(entry.get("file") or ""), str(name),
                                       str(entry.get("name") or name), self.trust)
        except LookupError as exc:
            return _unknown(str(exc))
        variants = entry.get("variant_list") or []
        # The disk cache `cost_in_subprocess` keeps: `jitguard report` and `fix` price a demotion once.
        return _priced_once(_price_key_of(jit_fn, param, demotion, self.arch, variants),
                            lambda: self.cost(jit_fn, param, demotion, variants))

    # one class of `param` per variant checked: the class is what the demotion changes
    def _variants_to_check(self, signature: Any, param: str) -> list[dict[str, Any]] | str:
        if signature is None:
            return "no recorded signature to compile"
        items = list(signature) if isinstance(signature, (list, tuple)) else [signature]
        if not items:
            return "no recorded signature to compile"
        chosen: dict[Any, dict[str, Any]] = {}
        for item in items:
            try:
                variant = variant_dict(item)
            except (TypeError, ValueError, AttributeError) as exc:
                return f"unreadable signature {item!r:.60}: {exc}"
            entry = variant["params"].get(param)
            slot = None if entry is None else (entry.get("kind"), entry.get("type"), entry.get("spec"))
            chosen.setdefault(slot, variant)
        return list(chosen.values())

    def _cost_of_variant(self, jit_fn: Any, param: str, demotion: str, variant: dict[str, Any]) -> DemotionCost:
        from jitguard import triton_compat

        names = triton_compat.param_names(jit_fn)
        if param not in names:
            return _unknown(f"kernel {triton_compat.kernel_name(jit_fn)} has no parameter {param!r}")
        if any(p.name == param and p.is_constexpr for p in jit_fn.params):
            return _unknown(f"{param} is a tl.constexpr: Triton cannot demote it")
        missing = [n for n in names if n not in variant["params"]]
        gone = [n for n in variant["params"] if n not in names]
        if missing or gone:
            return _unknown(f"kernel {triton_compat.kernel_name(jit_fn)} changed since the signature was recorded "
                            f"(missing: {', '.join(missing) or '-'}; gone: {', '.join(gone) or '-'})")
        entry = variant["params"][param]
        if entry.get("spec") == "off":
            variant = _as_if_specialized(variant, param)
            entry = variant["params"][param]
        spec = entry.get("spec")
        if spec not in _CLASSES_REMOVED[demotion]:
            what = SPEC_CLASS_WORDS.get(spec) if spec else f"a {entry.get('kind')} (never specialized)"
            return DemotionCost("free", f"{param} is {what} in the recorded variant: {demotion} compiles the same code")
        slot = (triton_compat.kernel_name(jit_fn), id(jit_fn), param, demotion,
                json.dumps(variant, sort_keys=True, default=repr))
        if slot not in self._costs:
            self._costs[slot] = self._judge(jit_fn, param, demotion, variant)
        return self._costs[slot]

    def _judge(self, jit_fn: Any, param: str, demotion: str, variant: dict[str, Any]) -> DemotionCost:
        from jitguard import triton_compat

        before = self._compiled_facts(jit_fn, param, None, variant)
        after = self._compiled_facts(jit_fn, param, demotion, variant)
        name = triton_compat.kernel_name(jit_fn)
        for facts, which in ((before, f"with {param} specialized"), (after, f"with {demotion}=[{param!r}]")):
            if isinstance(facts, str):
                return _unknown(f"could not compile {name} {which}: {facts}")
        assert isinstance(before, CodeFacts) and isinstance(after, CodeFacts)
        entry = variant["params"][param]
        warps = _num_warps(variant)
        prices, notes = compare_facts(before, after, degenerate=entry.get("spec") == "one", num_warps=warps)
        where = f"for {_describe_variant(variant, param)}"
        if not prices:
            return DemotionCost("free", "; ".join([f"same {before.summary(counts=False)} {where}"] + notes),
                                None, before, after)
        roles = set(before.uses.get(param, ())) | set(after.uses.get(param, ()))
        likely, why = likely_impact(before, after, param, roles, is_pointer=entry.get("kind") == "ptr",
                                    num_warps=warps)
        return DemotionCost("costly", f"likely {likely} ({why}): {'; '.join(prices)} {where}",
                            self._alternative(jit_fn, param, demotion, variant, before, after), before, after,
                            likely)

    def _alternative(self, jit_fn: Any, param: str, demotion: str, variant: dict[str, Any],
                     before: CodeFacts, after: CodeFacts) -> str:
        if demotion == "do_not_specialize":
            milder = self._cost_of_variant(jit_fn, param, "do_not_specialize_on_alignment", variant)
            if milder.verdict == "free":
                return ALTERNATIVE_ON_ALIGNMENT
        if variant["params"][param].get("kind") == "ptr":
            return ALTERNATIVE_ALIGNED_POINTER
        roles = set(before.uses.get(param, ())) | set(after.uses.get(param, ()))  # `== 1` is absent before
        if variant["params"][param].get("kind") == "int" and "address" in roles:
            return ALTERNATIVE_PAD.format(param=param)
        return ALTERNATIVE_WARMUP

    def _compiled_facts(self, jit_fn: Any, param: str, demotion: str | None,
                        variant: dict[str, Any]) -> CodeFacts | str:
        slot = (id(jit_fn), _demotion_lists(jit_fn, param, demotion), json.dumps(variant, sort_keys=True, default=repr))
        if slot not in self._facts:
            self._facts[slot] = self._compile(jit_fn, param, demotion, variant)
        return self._facts[slot]

    def _compile(self, jit_fn: Any, param: str, demotion: str | None, variant: dict[str, Any]) -> CodeFacts | str:
        from jitguard import triton_compat
        from jitguard.replay.arguments import representative_arg
        from jitguard.runtime.offline_backend import offline

        names = triton_compat.param_names(jit_fn)
        try:
            copy = _copy_with(jit_fn, param, demotion)
            with offline(arch=self.arch) as driver, _compiler_output_kept_apart():
                device = driver.get_active_torch_device()
                args = [representative_arg(n, variant["params"][n], device) for n in names]
                compiled = copy.warmup(*args, grid=(1,), **_codegen_options(variant["options"]))
        except Exception as exc:  # a failed compile is a verdict, never a crash
            return error_line(exc)
        asm = triton_compat.compiled_code(compiled)
        if "ptx" not in asm:
            return "the compiler produced no PTX (is a jitguard.offline(compile=False) context open?)"
        arg_names = _runtime_args(variant, names, param if demotion else None, demotion or "")
        facts = code_facts(asm.get("ttir", ""), asm["ptx"], arg_names, _cubin_usage(asm.get("cubin", b"")))
        # `metadata.shared`: the dynamic shared memory a program of this compile needs (public, as
        # Triton's fused-softmax tutorial reads it); it bounds the programs an SM holds.
        shared = getattr(getattr(compiled, "metadata", None), "shared", None)
        facts = dataclasses.replace(facts, shared_bytes=shared if isinstance(shared, int) else None)
        return facts.with_uses({n: param_uses(asm.get("ttir", ""), n, arg_names) for n in arg_names})


def error_line(exc: BaseException) -> str:
    """One line saying why a compile failed: the error's message, never the source excerpt and caret
    line a Triton CompilationError ends with when it carries no message (then its cause says why)."""
    def message(error: BaseException) -> str:
        lines = [line.strip() for line in str(error).splitlines()]
        return next((line for line in reversed(lines) if line and set(line) != {"^"}), "")

    lines = str(exc).strip().splitlines()
    ends_in_excerpt = bool(lines) and set(lines[-1].strip()) == {"^"}
    cause = exc.__cause__ or exc.__context__
    if ends_in_excerpt and cause is not None and message(cause):
        return f"{type(cause).__name__}: {message(cause)[:200]}"
    if ends_in_excerpt:
        return f"{type(exc).__name__} {lines[0].strip()[:200]}"  # "at 12:8:": where, since nothing says why
    return f"{type(exc).__name__}: {message(exc)[:200]}"


@contextlib.contextmanager
def _compiler_output_kept_apart() -> Iterator[None]:
    """Send what the compiler writes to file descriptors 1 and 2 (an MLIR pass that fails prints the whole
    module there: tens of thousands of lines) to a temporary file while a price compiles; the verdict
    carries the reason in one line."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # no such descriptors (an embedded interpreter): nothing to keep apart
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def demotion_cost(kernel: Any, param: str, demotion: str = "do_not_specialize", signature: Any = None,
                  arch: int = 90) -> DemotionCost:
    """One-off `DemotionCostChecker(arch).cost(...)` (no cache shared between calls)."""
    return DemotionCostChecker(arch).cost(kernel, param, demotion, signature)


def costs_for_report(report: Mapping[str, Any], arch: int = 90,
                     checker: DemotionCostChecker | None = None) -> dict[tuple[str, str], DemotionCost]:
    """{(kernel name, param): cost} for every parameter of a report whose advice is a demotion."""
    from jitguard.events import OPTION_FOR_ADVICE

    checker = checker or DemotionCostChecker(arch)
    costs: dict[tuple[str, str], DemotionCost] = {}
    for entry in report.get("kernels") or []:
        for param, info in (entry.get("params") or {}).items():
            demotion = OPTION_FOR_ADVICE.get((info or {}).get("advice") or "")
            if demotion:
                costs[(entry.get("name", "?"), param)] = checker.cost_for_report_kernel(entry, param, demotion)
    return costs



def add_costs_to_report(report: dict[str, Any], checker: DemotionCostChecker | None = None,
                        on_progress: Any = None) -> int:
    """Give every demotion the report advises its price, in place; returns how many were checked.

    Each such parameter gets `params[NAME]["cost"] = {"verdict", "detail"[, "alternative"]}`; each
    kernel's `fix` then lists only the free and unknown demotions, and `fix_costly` the costly ones
    (None when there are none). `on_progress(done, total, kernel, param)` is called before each check.
    """
    from jitguard.events import OPTION_FOR_ADVICE
    from jitguard.explain import fix_for_advice

    checker = checker or DemotionCostChecker()
    todo = [(entry, param, OPTION_FOR_ADVICE.get(info.get("advice") or ""))
            for entry in report.get("kernels") or [] for param, info in (entry.get("params") or {}).items()
            if isinstance(info, dict) and OPTION_FOR_ADVICE.get(info.get("advice") or "")]
    for done, (entry, param, demotion) in enumerate(todo):
        if on_progress is not None:
            on_progress(done, len(todo), entry.get("name", "?"), param)
        entry["params"][param]["cost"] = checker.cost_for_report_kernel(entry, param, demotion).to_json()
    for entry in report.get("kernels") or []:
        params = entry.get("params") or {}
        entry.setdefault("fix_costly", None)  # every kernel carries it, priced or not
        if not any(isinstance(info, dict) and "cost" in info for info in params.values()):
            continue
        costly = {p for p, info in params.items() if (info.get("cost") or {}).get("verdict") == "costly"}
        entry["fix"] = fix_for_advice({p: i.get("advice") for p, i in params.items() if p not in costly}) or None
        entry["fix_costly"] = fix_for_advice({p: params[p].get("advice") for p in costly}) or None
    return len(todo)


# --- in a child process (for callers that must not swap their own process's driver) ----------------

def cost_in_subprocess(kernel: str, param: str, demotion: str = "do_not_specialize", signature: Any = None,
                       arch: int = 90, timeout: float = 300.0) -> DemotionCost:
    """`demotion_cost` for kernel "module:qualname", computed in a fresh Python process.

    The caller's process keeps its driver, caches and hooks untouched. Never raises: a child that
    fails or runs past `timeout` seconds gives an unknown verdict saying so. A kernel this process
    has loaded has its definitive verdicts kept in `jitguard.price.price_cache` (by its code, the
    parameter, the variants and the versions), so the same question is answered without a child.
    """
    variants = _variant_dicts(signature)
    request = {"kernel": kernel, "param": param, "demotion": demotion, "arch": arch, "signature": variants}
    return _priced_once(_price_cache_key(kernel, param, demotion, arch, variants),
                        lambda: _cost_from_child(request, timeout))


def _priced_once(key: str | None, compute: Any) -> DemotionCost:
    """The price under `key` in `jitguard.price.price_cache`, else `compute()`'s, kept when definitive
    (`key` None: computed, never kept)."""
    from jitguard.price import price_cache

    cached = price_cache.lookup(key) if key is not None else None
    if cached is not None:
        return DemotionCost(cached["verdict"], cached["detail"], cached.get("alternative"), likely=cached.get("likely"))
    cost = compute()
    if key is not None:
        price_cache.store(key, cost.to_json())
    return cost


def _cost_from_child(request: dict[str, Any], timeout: float) -> DemotionCost:
    """The verdict `python -m jitguard.price.demotion_cost` prints for `request`, or an unknown one saying why."""
    import subprocess
    import sys

    kernel, param = request["kernel"], request["param"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        done = subprocess.run([sys.executable, "-m", "jitguard.price.demotion_cost"],
                              input=json.dumps(request, default=repr),
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return _unknown(f"the cost check of {kernel}.{param} ran past {timeout:.0f} s")
    except OSError as exc:
        return _unknown(f"the cost check of {kernel}.{param} could not start: {exc}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return _unknown(f"the cost check of {kernel}.{param} failed (exit {done.returncode}): {last[:200]}")
    data = json.loads(lines[-1])
    return DemotionCost(data.get("verdict", "unknown"), data.get("detail", ""), data.get("alternative"),
                        likely=data.get("likely"))


def _price_cache_key(kernel: str, param: str, demotion: str, arch: int, signature: list[dict[str, Any]]) -> str | None:
    """`price_cache`'s key for kernel "module:qualname" as this process has it loaded (its code key
    from Triton), or None: a kernel this process has not imported is priced, never cached."""
    import sys

    module, _, qualname = kernel.partition(":")
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return _price_key_of(target, param, demotion, arch, signature)


def _price_key_of(kernel: Any, param: str, demotion: str, arch: int, signature: Any) -> str | None:
    """`price_cache`'s key for a loaded kernel (a JITFunction or a wrapper of one) and recorded
    variants, or None when the kernel has no code key or a variant cannot be read."""
    from jitguard import triton_compat
    from jitguard.price import price_cache

    jit_fn = triton_compat.unwrap_jit_function(kernel)
    code = triton_compat.kernel_code_key(jit_fn) if jit_fn is not None else None
    if code is None:
        return None
    try:
        variants = _variant_dicts(signature)
    except (TypeError, ValueError, AttributeError):
        return None
    return price_cache.price_key(code, param, demotion, arch, variants, triton_compat.TRITON_VERSION)


def _main() -> int:
    """`python -m jitguard.price.demotion_cost` < request JSON: prints the verdict as one JSON line."""
    import sys

    request = json.loads(sys.stdin.read())
    cost = demotion_cost(request["kernel"], request["param"], request.get("demotion", "do_not_specialize"),
                         request.get("signature"), request.get("arch", 90))
    print(json.dumps(cost.to_json()))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
