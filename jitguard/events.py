"""Records jitguard writes: one `CompileEvent` per Triton compile, one `ProcessRecord` per process.

Both serialise to one JSON object per line (NDJSON). The field names are a contract (DESIGN.md):
`jitguard.report.event_logs` reads them back from every process of a server for `jitguard report`, and
`jitguard fix --from` reads the merged report.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# A JIT function carrying this attribute is a pricing copy (jitguard.price): the monitor records none of its compiles.
COST_PROBE_ATTRIBUTE = "_jitguard_cost_probe"

# Advice codes (shared by explain, report and the codemod), and the decorator option each asks for
# (None: not a decorator edit):
#   do_not_specialize               an int took the value 1 and others, or crossed 2**31 with int64
#   do_not_specialize_on_alignment  an int flips between divisible-by-16 and not, never 1
#   int64                           annotate the parameter `tl.int64` and add it to do_not_specialize
#   caller_alignment                a pointer flips alignment: demote it, or fix the caller's slicing
#   constexpr_values                a constexpr takes many values: make it a runtime argument or bucket it
#   expected                        dtype, launch options, autotune configs: information only
#   inductor_sizes                  a torch.compile kernel: mark the dimension dynamic or warm the size up
#   compile_call                    a direct triton.compile call: its caller chose the signature
OPTION_FOR_ADVICE: dict[str, str | None] = {
    "do_not_specialize": "do_not_specialize",
    "int64": "do_not_specialize",
    "do_not_specialize_on_alignment": "do_not_specialize_on_alignment",
    "caller_alignment": "do_not_specialize_on_alignment",
    "constexpr_values": None,
    "expected": None,
    "inductor_sizes": None,
    "compile_call": None,
}


# A constexpr value JSON cannot hold as itself is recorded as an object of one key naming its kind:
#   {"dtype": "fp8e4nv"}       a Triton dtype (tl.float8e4nv), by its Triton name
#   {"tuple": [v, ...]}        a tuple, each element in this same form
#   {"float": "inf"}           a float that is not finite ("inf", "-inf", "nan")
#   {"repr": "..."}            anything else: shown, never rebuilt
# Logs written before this form hold a dtype as its repr, "triton.language.float8e4nv"; readers accept both
# (`jitguard.replay.arguments.constexpr_value` rebuilds either).
CONSTEXPR_TAGS = ("dtype", "tuple", "float", "repr")
LEGACY_DTYPE_PREFIX = "triton.language."


def constexpr_words(value: Any) -> str:
    """A recorded constexpr value as people read it: `128`, `'silu'`, `fp8e4nv`, `(16, 32)`."""
    if isinstance(value, dict) and len(value) == 1:
        (tag, inner), = value.items()
        if tag == "dtype":
            return str(inner)
        if tag == "tuple" and isinstance(inner, list):
            words = [constexpr_words(item) for item in inner]
            return "(" + ", ".join(words) + ("," if len(words) == 1 else "") + ")"
        if tag in ("float", "repr"):
            return str(inner)
    if isinstance(value, str) and value.startswith(LEGACY_DTYPE_PREFIX):
        return value[len(LEGACY_DTYPE_PREFIX):]
    return repr(value)


def listed_parameter(entry: Any, names: list[str] | tuple[str, ...]) -> str | None:
    """The parameter a `do_not_specialize[_on_alignment]` entry demotes as Triton reads it, or None when
    it demotes none (Triton then ignores it silently): a name among `names`, or an index `0 <= i <
    len(names)`. Triton compares an index with each parameter's position, so a negative index
    (`do_not_specialize=[-1]`) names nothing."""
    if isinstance(entry, str):
        return entry if entry in names else None
    if isinstance(entry, int) and not isinstance(entry, bool) and 0 <= entry < len(names):
        return names[entry]
    return None


@dataclass
class ParamSpec:
    """How Triton specialized one kernel parameter for one compiled variant.

    `value` is the value of a `tl.constexpr` parameter (or None), in the form `CONSTEXPR_TAGS` describes
    when JSON cannot hold it as itself; `observed` is what the call that
    compiled this variant passed: an int/float/bool for scalars, {"dtype", "shape", "align"} for
    tensors (align = data_ptr % 16), None when unknown.
    """

    kind: str  # "int" | "ptr" | "float" | "bool" | "constexpr" | "tuple" | "none"
    type: str | None = None  # Triton type: "i32", "i64", "*bf16", "fp32", ...
    # int: "one" (== 1), "div16" (% 16 == 0), "plain", "off" (do_not_specialize), "noalign" (in
    # do_not_specialize_on_alignment: any value but 1);
    # ptr: "aligned16", "unaligned", "off"; other kinds: None
    spec: str | None = None
    value: Any = None
    observed: Any = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ParamSpec:
        known: dict[str, Any] = {f.name: data.get(f.name) for f in dataclasses.fields(cls)}
        return cls(**known)


@dataclass
class Cause:
    """One reason a new variant was compiled: `param` changed from `before` to `after`."""

    param: str
    before: str
    after: str
    advice: str | None
    message: str = ""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


ORIGINS = ("jit", "gluon", "inductor", "compile")
"""What made a compile (`CompileEvent.origin`)."""
DECORATOR_ORIGINS = ("jit", "gluon")
"""Origins whose specialization the kernel's decorator decides, so a decorator edit (`jitguard fix`) can
change it; Inductor's generated code and a direct `triton.compile` call choose theirs elsewhere."""

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "enable_fp_fusion", "launch_cooperative_grid", "maxnreg")
"""Every launch option a compile records (`CompileEvent.options`, a report variant's `options`)."""
CODEGEN_OPTIONS = tuple(option for option in LAUNCH_OPTIONS if option != "launch_cooperative_grid")
"""The launch options that change the generated code: a price compiles with them; the others (and the
monitor's `passed`) change only how the kernel is launched or keyed."""
CONFIG_OPTIONS = tuple(option for option in CODEGEN_OPTIONS if option != "enable_fp_fusion")
"""The launch options a caller chooses per launch or per autotune config (`triton.Config`'s fields)."""


def bound_label(kernel: str, binding: str | None) -> str:
    """How messages name a kernel: its function's name; a class attribute's dotted path
    (`PackSeqTritonKernel.kernel`); or `name (as binding)` when the program calls it by another
    module-level name (one function jitted twice is two kernels, told apart by binding)."""
    if not binding:
        return kernel
    return binding if binding.endswith("." + kernel) else f"{kernel} (as {binding})"


@dataclass
class CompileEvent:
    """One compile of one Triton kernel, as seen by the monitor."""

    kernel: str
    module: str = ""
    file: str = ""
    line: int = 0
    call_site: str = ""
    pid: int = 0
    ppid: int = 0
    rank: int | None = None
    role: str | None = None
    # CUDA device index; under jitguard.offline() 1_000_000 + arch (offline_backend.OFFLINE_DEVICE_BASE)
    device: int = 0
    phase: str = "warmup"  # "warmup" | "serving"
    variant: int = 1
    key: str = ""
    params: dict[str, ParamSpec] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    compile_ms: float | None = None
    disk_cache_hit: bool | None = None
    # How the kernel arrived: "cold" (compiled), "disk" (local cache; for an Inductor kernel torch launches
    # without Triton, torch's own caches), "bundle" (an entry a compile bundle installed), "remote" (Triton's
    # remote cache), "worker" (an Inductor compile worker compiled or loaded it and handed it over: the worker's
    # own event is the compile, the report ties the two by `key` and counts one); None where this Triton cannot
    # tell. compile_ms is the time either way.
    arrived: str | None = None
    # A cold compile although the cache held this variant under another key: {"entries": n, "differs": [the key
    # components that differ, in words]} (jitguard.runtime.cache_miss); None otherwise.
    cache_miss: dict[str, Any] | None = None
    # What asked Triton to compile (ORIGINS): "jit" (a @triton.jit kernel's launch or warm-up), "gluon" (a
    # @gluon.jit kernel's), "inductor" (torch.compile's generated kernels), "compile" (a direct
    # `triton.compile` call). Logs written before the field hold only "jit" compiles.
    origin: str = "jit"
    # An Inductor kernel's provenance where torch says it (`InductorFacts.to_dict`); None otherwise.
    inductor: dict[str, Any] | None = None
    causes: list[Cause] = field(default_factory=list)
    triton_version: str = ""
    time: float = 0.0
    is_manual_warmup: bool = False
    autotuning: bool = False  # compiled while @triton.autotune benchmarked its configs
    # The name the module holds the kernel by when it is not `kernel`: a class attribute's dotted path
    # (`Pack.kernel`), or another module-level name (one function jitted under other names, maybe
    # twice: each binding is a kernel of its own); "" otherwise.
    binding: str = ""

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["type"] = "compile"
        return data

    @property
    def label(self) -> str:
        """The kernel as messages name it (`bound_label`)."""
        return bound_label(self.kernel, self.binding)

    def answers_to(self, name: str) -> bool:
        """True when `name` names this event's kernel: its function's name (every kernel made from it),
        its binding, or its label."""
        return name in (self.kernel, self.binding, self.label)

    @property
    def called_as(self) -> str:
        """The module attribute holding this kernel: the binding, else the function's name."""
        return self.binding or self.kernel

    @classmethod
    def from_dict(cls, data: dict) -> CompileEvent:
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["params"] = {n: ParamSpec.from_dict(p) for n, p in (data.get("params") or {}).items()}
        kwargs["causes"] = [Cause(**{k: c.get(k) for k in ("param", "before", "after", "advice", "message")})
                            for c in (data.get("causes") or [])]
        return cls(**kwargs)

    @property
    def loaded(self) -> bool:
        """True when the kernel was loaded from a cache or a bundle, not compiled."""
        return self.arrived in ("disk", "bundle", "remote")

    @property
    def is_recompile(self) -> bool:
        """True for the second and later variants of a kernel in one process."""
        return self.variant > 1


def variant_dict(variant: CompileEvent | Mapping[str, Any]) -> dict[str, Any]:
    """One compiled variant as plain data, ``{"params": {name: ParamSpec's fields}, "options": {...}}``:
    from a CompileEvent, or from a mapping of that shape (a report's `variant_list` entry, a plan variant,
    a `signature_from_call` result) whose params are ParamSpecs or dicts. Other keys are left out."""
    if isinstance(variant, Mapping):
        params, options = variant.get("params") or {}, variant.get("options")
    else:
        params, options = getattr(variant, "params", None) or {}, getattr(variant, "options", None)
    return {"params": {name: spec.to_dict() if hasattr(spec, "to_dict") else dict(spec)
                       for name, spec in params.items()},
            "options": dict(options or {})}


@dataclass
class ProcessRecord:
    """Written once per process, first line of its NDJSON file (again when its role, rank or
    `events_not_written` change: the report keeps the latest of each)."""

    pid: int
    ppid: int
    argv: list[str]
    role: str | None = None
    rank: int | None = None
    triton_version: str = ""
    host: str = ""
    time: float = 0.0
    events_not_written: int = 0  # events this process could not write to its log (a failing sink)

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["type"] = "process"
        return data


def to_json_line(record: CompileEvent | ProcessRecord | dict) -> str:
    """One record as one JSON line (no trailing newline); never fails on odd values."""
    data = record if isinstance(record, dict) else record.to_dict()
    return json.dumps(data, default=repr, separators=(",", ":"))
