"""Every difference between Triton versions (3.2 .. 3.9+) that jitguard touches lives here.

- hook slots: `triton.knobs.runtime.jit_cache_hook` / `jit_post_compile_hook` and
  `triton.knobs.compilation.listener` on 3.4+; `JITFunction.cache_hook` / `compiled_hook` before;
- the hook's `compile` dict: constants and attributes keyed by path tuples (3.3+) or by name and an
  `AttrsDescriptor` (3.2);
- the active driver slot, the per-device kernel caches, `load_binary`'s return shape;
- `ClassPatch`, the one way jitguard replaces attributes of Triton's classes (its users: call
  capture's launcher `run` wrappers, `runtime/offline_sides.py`, `tuning/bucketed_tuner.py`,
  `tuning/autotune_observer.py`), and accessors for every private attribute jitguard reads (kernel
  registry, demotion lists, autotuner state, compiled code, the listener's positional `cache_hit`).

Importing this module imports Triton.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import triton
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction

from jitguard.events import CONFIG_OPTIONS, LAUNCH_OPTIONS, ParamSpec
from jitguard.internal_frames import callers

TRITON_VERSION: str = triton.__version__
VERSION: tuple[int, int] = tuple(int(p) for p in TRITON_VERSION.split(".")[:2])  # type: ignore[assignment]
HAS_KNOBS: bool = VERSION >= (3, 4)
# Before 3.3, tl.dot takes no operand under 16 rows or columns (jitguard.kernels' token tiles).
MIN_DOT_SIZE: int = 16 if VERSION < (3, 3) else 8

if HAS_KNOBS:
    import triton.knobs as _knobs

TRITON_DIR = os.path.dirname(os.path.abspath(triton.__file__))


# --- hook slots -------------------------------------------------------------------------------
def get_hook(slot: str) -> Callable | None:
    """The callable currently installed in a hook slot (None if empty or unsupported)."""
    if slot == "pre_compile":
        return _knobs.runtime.jit_cache_hook if HAS_KNOBS else JITFunction.cache_hook
    if slot == "post_compile":
        return _knobs.runtime.jit_post_compile_hook if HAS_KNOBS else JITFunction.compiled_hook
    if slot == "listener":
        return _knobs.compilation.listener if HAS_KNOBS else None
    raise ValueError(f"unknown hook slot {slot!r}")


def set_hook(slot: str, hook: Callable | None) -> None:
    """Put `hook` in a slot; the listener slot is a no-op before 3.4 (it does not exist there)."""
    if slot == "pre_compile":
        if HAS_KNOBS:
            _knobs.runtime.jit_cache_hook = hook
        else:
            JITFunction.cache_hook = hook
    elif slot == "post_compile":
        if HAS_KNOBS:
            _knobs.runtime.jit_post_compile_hook = hook
        else:
            JITFunction.compiled_hook = hook
    elif slot == "listener":
        if HAS_KNOBS:
            _knobs.compilation.listener = hook
    else:
        raise ValueError(f"unknown hook slot {slot!r}")


def has_listener() -> bool:
    """Whether this Triton reports disk-cache hits through `knobs.compilation.listener` (3.4+)."""
    return HAS_KNOBS


def listener_cache_hit(args: tuple, kwargs: dict) -> bool | None:
    """The `cache_hit` a compilation listener call carries: a keyword, or the 5th positional argument
    (`listener(src, metadata, metadata_group, times, cache_hit)`); None when absent."""
    cache_hit = kwargs.get("cache_hit", args[4] if len(args) > 4 else None)
    return bool(cache_hit) if cache_hit is not None else None


_LISTENER_NAMES = ("src", "metadata", "metadata_group", "times", "cache_hit")


def listener_arguments(args: tuple, kwargs: dict) -> dict[str, Any]:
    """{src, metadata, metadata_group, times, cache_hit} of one compilation listener call (3.4+: keywords;
    positions accepted too); a missing one is None."""
    named = dict(zip(_LISTENER_NAMES, args))
    named.update({k: v for k, v in kwargs.items() if k in _LISTENER_NAMES})
    return {name: named.get(name) for name in _LISTENER_NAMES}


def listener_compile_ms(times: Any) -> float | None:
    """Milliseconds one `triton.compile` call took, from the listener's `CompileTimes` (microseconds:
    IR build, each lowering stage, storing); None when absent."""
    if times is None:
        return None
    try:
        stages = sum(int(duration) for _, duration in getattr(times, "lowering_stages", None) or [])
        total = int(getattr(times, "ir_initialization", 0) or 0) + stages + int(getattr(times, "store_results", 0) or 0)
    except (TypeError, ValueError):
        return None
    return total / 1000.0


def source_kernel(src: Any) -> JITFunction | None:
    """The JITFunction an `ASTSource` compiles (a `triton.compile` of IR text has none)."""
    fn = getattr(src, "fn", None)
    return fn if isinstance(fn, JITFunction) else None


def source_compile_info(src: Any, metadata: Any) -> dict[str, Any]:
    """What a JIT hook's `compile` dict holds, for a `triton.compile(ASTSource(...))` call: the source's
    signature, constants and attributes, and the launch options the compiled kernel's metadata has."""
    info: dict[str, Any] = {"signature": dict(getattr(src, "signature", None) or {}),
                            "constants": dict(getattr(src, "constants", None) or {})}
    attrs = getattr(src, "attrs", None)
    info["configs"] = [attrs] if attrs is not None else []
    if isinstance(metadata, dict):
        info.update({k: v for k, v in metadata.items() if k in LAUNCH_OPTIONS})
        info["target"] = metadata.get("target")
    return info


def source_name(src: Any, metadata: Any) -> str:
    """The kernel name of one `triton.compile` call: the JIT function's, else the compiled module's entry
    (the metadata's `name`), else the IR file's stem."""
    fn = source_kernel(src)
    if fn is not None:
        return kernel_name(fn)
    name = metadata.get("name") if isinstance(metadata, dict) else getattr(metadata, "name", None)
    if name:
        return str(name)
    path = getattr(src, "path", None) or (src if isinstance(src, str) else "")
    return os.path.splitext(os.path.basename(str(path)))[0] or "?"


def source_key(src: Any, metadata: Any) -> str:
    """Triton's hash of one compiled kernel (its cache directory's name), or "" when unknown."""
    value = metadata.get("hash") if isinstance(metadata, dict) else getattr(metadata, "hash", None)
    return str(value or "")


def is_gluon_kernel(jit_fn: Any) -> bool:
    """Whether `jit_fn` is a `@gluon.jit` kernel (3.5+: `GluonJITFunction`, a JITFunction subclass)."""
    return any(cls.__name__ == "GluonJITFunction" and cls.__module__.startswith("triton.experimental.gluon")
               for cls in type(jit_fn).__mro__)


def patch_compile_entry(wrap: Callable[[Callable], Callable]) -> Callable[[], None]:
    """Before 3.4 (no compilation listener): replace `triton.compile`, the entry point direct callers use,
    with `wrap(Triton's compile)`. A JIT launch keeps the compile it captured. Returns the undo."""
    import triton.compiler as triton_compiler

    original = triton_compiler.compile
    wrapped = wrap(original)
    holders = [module for module in (triton, triton_compiler) if getattr(module, "compile", None) is original]
    for module in holders:
        module.compile = wrapped

    def undo() -> None:
        for module in holders:
            if getattr(module, "compile", None) is wrapped:
                module.compile = original

    return undo


# --- patching Triton's classes ------------------------------------------------------------------

_MISSING = object()


class ClassPatch:
    """Attributes of Triton classes replaced for a while, then put back exactly as they were.

    The one way jitguard patches Triton (the offline backend's side split, the call wrappers of
    `no_recompiles` and `sweep`). `restore()` deletes an attribute the class did not define itself
    and leaves alone one that another tool replaced since (its own restore will find ours).

        patch = ClassPatch()
        patch.replace(JITFunction, "run", wrapped_run)
        ...
        patch.restore()
    """

    def __init__(self) -> None:
        self._saved: list[tuple[type, str, Any, Any]] = []  # (class, name, what it defined, ours)

    @property
    def active(self) -> bool:
        return bool(self._saved)

    def replace(self, cls: type, name: str, value: Any) -> None:
        self._saved.append((cls, name, cls.__dict__.get(name, _MISSING), value))
        setattr(cls, name, value)

    def restore(self) -> None:
        for cls, name, before, ours in reversed(self._saved):
            if cls.__dict__.get(name, _MISSING) is not ours:
                continue
            if before is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, before)
        self._saved.clear()


def patch_launcher_runs(wrap: Callable[[Callable], Callable]) -> ClassPatch:
    """Replace `run` of every launcher class with `wrap(Triton's run)`; a `run` already marked
    `__jitguard_wrapper__` stays. Returns the patch that puts them back."""
    patch = ClassPatch()
    for cls in launcher_classes():
        original = cls.__dict__.get("run")
        if original is None or getattr(original, "__jitguard_wrapper__", False):
            continue
        patch.replace(cls, "run", wrap(original))
    return patch


def is_manual_warmup_call(run_kwargs: dict) -> bool:
    """Whether a launcher's `run(...)` is `kernel.warmup(...)` (compile, never launch)."""
    return bool(run_kwargs.get("warmup", False))


def launcher_classes() -> tuple[type, ...]:
    """Triton's classes whose `run` launches a kernel: a @triton.jit kernel and its autotune and
    heuristics wrappers."""
    return (JITFunction, Autotuner, Heuristics)


def autotuner_config_caches(launcher: Any, jit_fn: JITFunction) -> list[dict]:
    """{tuning key: chosen config} of every autotuner between `launcher` and the kernel it wraps."""
    caches = []
    wrapper = launcher
    while wrapper is not None and wrapper is not jit_fn:
        if isinstance(wrapper, Autotuner) and isinstance(getattr(wrapper, "cache", None), dict):
            caches.append(wrapper.cache)
        wrapper = getattr(wrapper, "fn", None)
    return caches




# --- the active driver ------------------------------------------------------------------------

def get_active_driver_raw() -> Any:
    """The driver slot as it is, without creating the default driver (which fails with no GPU)."""
    from triton.runtime.driver import driver
    if hasattr(driver, "_active"):
        return driver._active
    return driver.active  # 3.2/3.3: a LazyProxy that has not initialised anything yet


def set_active_driver_raw(value: Any) -> None:
    """Put a driver (or the saved raw slot value) back in place."""
    from triton.runtime.driver import driver
    if hasattr(driver, "_active"):
        driver._active = value
    else:
        driver.active = value


def offline_driver_base() -> tuple[type, Callable[..., Any]]:
    """(DriverBase, GPUTarget): what a driver class and its target are built from."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase
    return DriverBase, GPUTarget


def backend_driver_available() -> bool:
    """Whether one of Triton's backends finds its device here (a GPU and its driver), so the default
    driver can be created; False on a machine without one."""
    from triton.backends import backends
    return any(backend.driver.is_active() for backend in backends.values())


def active_driver() -> Any:
    """The active driver (creating Triton's default one if none was set)."""
    from triton.runtime.driver import driver
    return driver.active


def active_device() -> tuple[Any, int]:
    """(torch device, device index) of the active driver (a GPU, or jitguard's offline driver)."""
    active = active_driver()
    return active.get_active_torch_device(), active.get_current_device()


def ptxas_path(arch: int = 90) -> str:
    """The ptxas this Triton runs for ``arch`` (the one shipped in the wheel unless TRITON_PTXAS_PATH says
    otherwise): `get_ptxas(arch).path` on 3.5+, `_path_to_binary("ptxas")` before."""
    from triton.backends.nvidia import compiler as nvidia_compiler
    if hasattr(nvidia_compiler, "get_ptxas"):
        return str(nvidia_compiler.get_ptxas(arch).path)
    return str(nvidia_compiler._path_to_binary("ptxas")[0])


def load_binary_result(module: Any, function: Any, n_regs: int, n_spills: int, n_max_threads: int) -> tuple:
    """What `driver.utils.load_binary` returns: 4 values before 3.4, 5 from 3.4."""
    if VERSION >= (3, 4):
        return module, function, n_regs, n_spills, n_max_threads
    return module, function, n_regs, n_spills


# --- kernels and their caches ------------------------------------------------------------------

def unwrap_jit_function(fn: Any) -> JITFunction | None:
    """The JITFunction under autotune/heuristics wrappers, or None."""
    seen = 0
    while fn is not None and not isinstance(fn, JITFunction) and seen < 16:
        fn = getattr(fn, "fn", None)
        seen += 1
    return fn if isinstance(fn, JITFunction) else None


def kernel_cache(jit_fn: JITFunction, device: int) -> dict:
    """The in-memory cache {key: CompiledKernel} of one kernel on one device."""
    if hasattr(jit_fn, "device_caches"):
        if device not in jit_fn.device_caches:
            return {}
        return jit_fn.device_caches[device][0]
    return jit_fn.cache[device]  # 3.2


def all_kernel_caches(jit_fn: JITFunction) -> list[dict]:
    """Every per-device in-memory cache of one kernel."""
    if hasattr(jit_fn, "device_caches"):
        return [entry[0] for entry in jit_fn.device_caches.values()]
    return list(jit_fn.cache.values())


def forget_compiled_variants(jit_fn: JITFunction) -> None:
    """Empty a kernel's in-memory caches on every device (3.5+ also its key cache), so its next
    launches compile (or hit the disk cache) again and fire the compile hooks."""
    if hasattr(jit_fn, "device_caches"):
        for entry in jit_fn.device_caches.values():
            for cache in entry[:2]:
                if isinstance(cache, dict):
                    cache.clear()
        return
    for cache in jit_fn.cache.values():
        cache.clear()


def registered_kernel(module_name: str, name: str) -> JITFunction | None:
    """A kernel Triton's registry knows by module and name (3.5+: `module:qualname` of every kernel
    defined so far, those defined inside functions included); None when unknown or before 3.5."""
    registry = kernel_registry() or {}
    for full_name, fn in list(registry.items()):
        mod, _, qualname = full_name.partition(":")
        if mod == module_name and qualname.rsplit(".", 1)[-1] == name:
            return fn
    return None


def kernel_code_key(jit_fn: JITFunction) -> str | None:
    """Triton's hash of a kernel's code (its source, the JIT functions it calls, the globals it
    reads), or None when this Triton cannot compute it for the kernel."""
    try:
        key = jit_fn.cache_key
    except Exception:  # a kernel whose dependencies do not resolve: no key, never an error
        return None
    return key if isinstance(key, str) and key else None


def kernel_name(jit_fn: JITFunction) -> str:
    return str(getattr(jit_fn.fn, "__name__", None) or getattr(jit_fn, "__name__", "?"))


def binding_name(jit_fn: JITFunction) -> str:
    """The name the program reaches `jit_fn` by from its module, when that is not its function's own
    name: a class attribute's dotted path (vLLM's `PackSeqTritonKernel.kernel`), or another
    module-level name (`copy_plain = triton.jit(do_not_specialize=["n"])(_copy)`: "copy_plain"); ""
    when the function's name is the kernel, or when nothing in the module holds it (a kernel made
    inside a function).

    Kernels that share a `__name__` (`kernel` in several classes of one file, one function jitted
    twice) are told apart by it, and it is what a child process imports to price or warm up the
    right one.
    """
    fn = getattr(jit_fn, "fn", None)
    scope = getattr(fn, "__globals__", None)
    if not isinstance(scope, dict):
        return ""

    def holds(value: Any) -> bool:
        # Only Triton's own wrappers are unwrapped: another module-level object's `fn` may do anything.
        return value is jit_fn or (isinstance(value, (Autotuner, Heuristics)) and unwrap_jit_function(value) is jit_fn)

    if holds(scope.get(getattr(fn, "__name__", ""))):
        return ""
    qualname = str(getattr(fn, "__qualname__", ""))
    if "." in qualname and "<locals>" not in qualname:  # defined in a class body: walk the classes
        first, *rest = qualname.split(".")
        holder = scope.get(first)
        for part in rest:
            holder = inspect.getattr_static(holder, part, None) if holder is not None else None
            if isinstance(holder, (staticmethod, classmethod)):  # vLLM's `@staticmethod @triton.jit def kernel`
                holder = holder.__func__
        if holds(holder):
            return qualname
    return next((str(name) for name, value in list(scope.items()) if holds(value)), "")


def kernel_location(jit_fn: JITFunction) -> tuple[str, int]:
    """Source file and `def` line of a kernel."""
    code = getattr(jit_fn.fn, "__code__", None)
    if code is None:
        return "", 0
    return code.co_filename, code.co_firstlineno


def param_names(jit_fn: JITFunction) -> list[str]:
    return [p.name for p in jit_fn.params]


# --- what the compile hook tells ---------------------------------------------------------------

_INT_TYPES = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
_BOOL_TYPES = {"i1", "u1"}


def _kind_of_type(ty: str) -> str:
    if ty.startswith("*"):
        return "ptr"
    if ty in _INT_TYPES:
        return "int"
    if ty in _BOOL_TYPES:
        return "bool"
    if ty.startswith(("fp", "bf")):
        return "float"
    return ty


def _observed(value: Any) -> Any:
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr):
        try:
            return {"dtype": str(getattr(value, "dtype", "")).replace("torch.", ""),
                    "shape": list(getattr(value, "shape", [])), "align": int(data_ptr()) % 16}
        except Exception:  # a fake or exotic tensor: not worth failing for
            return None
    return None


def _constants_by_index(jit_fn: JITFunction, constants: dict) -> dict[int, Any]:
    names = param_names(jit_fn)
    out: dict[int, Any] = {}
    for key, value in (constants or {}).items():
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], int):
            out[key[0]] = value
        elif isinstance(key, int):
            out[key] = value
        elif isinstance(key, str) and key in names:
            out[names.index(key)] = value
    return out


def _attrs_by_index(configs: Any) -> tuple[set[int], set[int]]:
    """(indices divisible by 16, indices equal to 1) from the hook's `configs`."""
    divisible: set[int] = set()
    equal_one: set[int] = set()
    if not configs:
        return divisible, equal_one
    config = configs[0]
    if isinstance(config, dict):  # 3.3+: {(idx,): [['tt.divisibility', 16]], ...}
        for key, attrs in config.items():
            if isinstance(key, tuple) and len(key) == 1 and any(a and a[0] == "tt.divisibility" for a in attrs):
                divisible.add(key[0])
    else:  # 3.2: AttrsDescriptor
        divisible.update(getattr(config, "divisibility_16", None) or [])
        equal_one.update(getattr(config, "equal_to_1", None) or [])
    return divisible, equal_one


def param_specs(jit_fn: JITFunction, compile_info: dict, bound_args: dict | None) -> dict[str, ParamSpec]:
    """Classify every parameter of one compiled variant (see `ParamSpec`)."""
    signature = compile_info.get("signature") or {}
    constants = _constants_by_index(jit_fn, compile_info.get("constants") or {})
    divisible, equal_one = _attrs_by_index(compile_info.get("configs"))
    specs: dict[str, ParamSpec] = {}
    for index, param in enumerate(jit_fn.params):
        name = param.name
        arg = bound_args.get(name) if bound_args else None
        observed = _observed(arg)
        if param.is_constexpr:
            value = constants.get(index, arg)
            specs[name] = ParamSpec("constexpr", "constexpr", None, constexpr_json(value), None)
            continue
        ty = signature.get(name)
        if isinstance(ty, tuple):
            specs[name] = ParamSpec("tuple", str(ty), None, None, None)
            continue
        if ty == "constexpr" or (ty is None and index in constants) or index in equal_one:
            value = constants.get(index, arg)
            if value is None:
                specs[name] = ParamSpec("none", None, None, None, None)
            elif value == 1 and not isinstance(value, bool):
                specs[name] = ParamSpec("int", "i32", "one", None, 1)
            else:
                specs[name] = ParamSpec("constexpr", "constexpr", None, constexpr_json(value), None)
            continue
        if ty is None:
            specs[name] = ParamSpec("none" if arg is None else "?", None, None, None, observed)
            continue
        if ty == "*i8" and arg is None:  # 3.2 passes None as a byte pointer
            specs[name] = ParamSpec("none", None, None, None, None)
            continue
        kind = _kind_of_type(ty)
        spec = None
        if kind == "int":
            if param.do_not_specialize:
                spec = "off"
            elif getattr(param, "do_not_specialize_on_alignment", False):
                spec = "noalign"  # only the value 1 is specialized (it took the "one" branch above)
            else:
                spec = "div16" if index in divisible else "plain"
        elif kind == "ptr":
            if param.do_not_specialize or param.do_not_specialize_on_alignment:
                spec = "off"
            else:
                spec = "aligned16" if index in divisible else "unaligned"
        specs[name] = ParamSpec(kind, ty, spec, None, observed)
    return specs


def constexpr_json(value: Any) -> Any:
    """A constexpr value as JSON can hold it: itself, or the tagged form of `jitguard.events.CONSTEXPR_TAGS`
    (a dtype by its name, a tuple element-wise, a non-finite float by name, anything else by repr)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if type(value) is triton.language.dtype:  # a pointer or block type is a subclass: no name rebuilds it
        return {"dtype": value.name}
    if isinstance(value, (tuple, list)):
        return {"tuple": [constexpr_json(item) for item in value]}
    if isinstance(value, triton.language.constexpr):
        return constexpr_json(value.value)
    return {"repr": repr(value)}




def launch_options(compile_info: dict) -> dict[str, Any]:
    """The launch options of one compile (num_warps, num_stages, ...)."""
    return {n: compile_info[n] for n in LAUNCH_OPTIONS if n in compile_info}


# Options `JITFunction.run` adds to every call itself: not something the caller passed.
_RUN_SET_OPTIONS = ("debug", "instrumentation_mode", "fpsan_homomorphic_casts")


def explicit_launch_options(key: Any) -> dict[str, Any] | None:
    """The keyword options the compiling call passed (num_warps=..., ...), read off Triton's key.

    Triton keys a variant on the options a call passed, not on their values after defaults: a call
    without `num_warps` and one with `num_warps=4` are two keys. The key ends with those options as
    a dict literal (3.4+: `...]{'num_warps': 8, 'debug': False}`; 3.2: `...({...}, {'debug': False})`).
    None when the key does not end that way.
    """
    import ast
    text = key_string(key).rstrip(")").rstrip()
    end = text.rfind("}")
    start = text.rfind("{", 0, end)
    if end < 0 or start < 0:
        return None
    try:
        value = ast.literal_eval(text[start:end + 1])
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, dict):
        return None
    return {k: v for k, v in value.items() if isinstance(k, str) and k not in _RUN_SET_OPTIONS}


def key_string(key: Any) -> str:
    return key if isinstance(key, str) else repr(key)


# --- the call being compiled --------------------------------------------------------------------

def find_run_frame(jit_fn: JITFunction, start_frame: Any) -> Any:
    """The frame of the `JITFunction.run` call that is compiling `jit_fn`, or None.

    Walking from there (not from the hook) keeps other tools' chained hooks out of the call site.
    Only called on the compile path, never on a cache hit.
    """
    return next((frame for frame in callers(start_frame, 16)
                 if frame.f_code.co_name == "run" and frame.f_locals.get("self") is jit_fn), None)


def bound_args_of(run_frame: Any) -> dict | None:
    """{parameter name: argument} of the call in a `JITFunction.run` frame."""
    if run_frame is None:
        return None
    bound = run_frame.f_locals.get("bound_args")
    if bound is None:
        return None
    try:
        return dict(bound)
    except Exception:  # an exotic mapping: values are a nicety
        return None


def is_autotuning(start_frame: Any) -> bool:
    """Whether this compile happens while `@triton.autotune` benchmarks its configs."""
    return any(frame.f_code.co_name in ("_bench", "kernel_call") and frame.f_code.co_filename.startswith(TRITON_DIR)
               for frame in callers(start_frame, 24))


def autotuner_on_stack(start_frame: Any) -> Any:
    """The `Autotuner` whose `run` (or benchmark) led to this compile, or None: the `self` of the
    nearest Triton frame that is one. Read on the compile path only (never on a cache hit)."""
    for frame in callers(start_frame, 32):
        if frame.f_code.co_filename.startswith(TRITON_DIR):
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, Autotuner):
                return candidate
    return None


def config_names(config: Any) -> set[str]:
    """The names one autotune config sets: its kwargs, and the launch options it chooses."""
    names = set(getattr(config, "kwargs", None) or {})
    names.update(option for option in CONFIG_OPTIONS if getattr(config, option, None) is not None)
    return names


def autotune_config_names(tuner: Any) -> set[str]:
    """Every name an autotuner's configs set: their kwargs, and the launch options they choose."""
    names: set[str] = set()
    for config in getattr(tuner, "configs", None) or []:
        names.update(config_names(config))
    return names


def user_call_site(start_frame: Any, skip_dirs: tuple[str, ...]) -> str:
    """'path:line' of the first frame outside Triton, torch and jitguard."""
    for frame in callers(start_frame):
        filename = frame.f_code.co_filename
        if not filename.startswith(skip_dirs) and not filename.startswith("<"):
            return f"{filename}:{frame.f_lineno}"
    return ""


def torch_dir() -> str | None:
    module = sys.modules.get("torch")
    file = getattr(module, "__file__", None)
    if not file:
        return None
    return os.path.dirname(os.path.abspath(file))


def unknown_demotion_names(jit_fn: JITFunction) -> list[tuple[str, Any]]:
    """(option, entry) for each do_not_specialize[_on_alignment] entry that names no parameter.

    Triton ignores such entries silently, so the parameter stays specialized.
    """
    from jitguard.events import listed_parameter

    names = param_names(jit_fn)
    return [(option, entry)
            for option, entries in zip(("do_not_specialize", "do_not_specialize_on_alignment"), demotion_lists(jit_fn))
            for entry in entries if listed_parameter(entry, names) is None]


# --- Triton's classes and the attributes jitguard reads off them --------------------------------

def jit_function_type() -> type:
    """Triton's `JITFunction` class (a Gluon kernel's class derives from it on 3.5+)."""
    return JITFunction


def autotuner_type() -> type:
    """Triton's `Autotuner` class."""
    return Autotuner


def autotuner_benchmarker_property() -> Any:
    """What `Autotuner` itself defines as `do_bench`: a `functools.cached_property` on 3.6+ (the
    benchmarker picked on first use), None on 3.2 (each tuner gets one at decoration)."""
    return Autotuner.__dict__.get("do_bench")


def autotuner_best_config(tuner: Any) -> Any:
    """The config an autotuner chose last (`best_config`), or None before its first tuning."""
    return getattr(tuner, "best_config", None)


def kernel_registry() -> dict | None:
    """Triton's registry of every JITFunction made so far, {"module:qualname": kernel} (3.5+), or None."""
    from triton.runtime import jit as triton_jit
    registry = getattr(triton_jit, "_triton_jit_function_registry", None)
    return registry if isinstance(registry, dict) else None


def registry_key(jit_fn: JITFunction) -> str:
    """The name a kernel has in `kernel_registry()`: `module:qualname` of its Python function."""
    return f"{jit_fn.fn.__module__}:{jit_fn.fn.__qualname__}"


def demotion_lists(jit_fn: JITFunction) -> tuple[list, list]:
    """(do_not_specialize, do_not_specialize_on_alignment) as the kernel was decorated: names and
    indices, mixed, as given."""
    return (list(getattr(jit_fn, "do_not_specialize", None) or []),
            list(getattr(jit_fn, "do_not_specialize_on_alignment", None) or []))


def compiled_code(compiled: Any) -> dict[str, Any]:
    """{stage: text or bytes} of a compiled kernel (`ttir`, `ptx`, `cubin`, ...); {} for none."""
    return dict(getattr(compiled, "asm", None) or {})


def autotuner_key_names(tuner: Any) -> list[str]:
    """The parameter names in the tuner's `key=[...]`."""
    return list(getattr(tuner, "keys", None) or [])


def autotuner_arg_names(tuner: Any) -> list[str]:
    return list(getattr(tuner, "arg_names", None) or [])


def autotune_call_values(tuner: Any, args: tuple, kwargs: dict) -> tuple[dict[str, Any], list[str]]:
    """({key name: value} and the tensor dtypes) that Triton's tuning key holds for one call."""
    arg_names = autotuner_arg_names(tuner)
    named = dict(zip(arg_names, args))
    named.update({k: v for k, v in kwargs.items() if k in arg_names})
    values = {k: named[k] for k in autotuner_key_names(tuner) if k in named}
    dtypes = [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return values, dtypes


def launcher_supplied_names(launcher: Any) -> set[str]:
    """The parameters a launcher fills in itself, which its caller must not pass: every autotune
    config's kwargs and every `@triton.heuristics` value between `launcher` and its kernel."""
    names: set[str] = set()
    wrapper = launcher
    while wrapper is not None and not isinstance(wrapper, JITFunction):
        if isinstance(wrapper, Autotuner):
            for config in getattr(wrapper, "configs", None) or []:
                names.update(getattr(config, "kwargs", None) or {})  # not its options: the caller may pass them
        elif isinstance(wrapper, Heuristics):
            names.update(getattr(wrapper, "values", None) or {})
        wrapper = getattr(wrapper, "fn", None)
    return names


def is_autotuned(launcher: Any) -> bool:
    """Whether an Autotuner sits between `launcher` and the kernel it launches."""
    wrapper = launcher
    while wrapper is not None and not isinstance(wrapper, JITFunction):
        if isinstance(wrapper, Autotuner):
            return True
        wrapper = getattr(wrapper, "fn", None)
    return False


def cuobjdump_path() -> str | None:
    """Triton's bundled `cuobjdump` (its NVIDIA backend ships one), else the one on PATH, else None."""
    import shutil

    bundled = os.path.join(TRITON_DIR, "backends", "nvidia", "bin", "cuobjdump")
    return bundled if os.access(bundled, os.X_OK) else shutil.which("cuobjdump")


# `jitguard run`'s import watcher starts the monitor on the first `import triton`; when that import
# came from the top of this module, it waits until this module is complete (the monitor needs it).
_watcher = sys.modules.get("jitguard.runtime.bootstrap.triton_hook")
if _watcher is not None:
    _watcher.triton_compat_imported()
