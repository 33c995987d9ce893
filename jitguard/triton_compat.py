"""Every difference between Triton versions (3.2 .. 3.9+) that jitguard touches lives here.

- hook slots: `triton.knobs.runtime.jit_cache_hook` / `jit_post_compile_hook` and
  `triton.knobs.compilation.listener` on 3.4+; `JITFunction.cache_hook` / `compiled_hook` before;
- the hook's `compile` dict: constants and attributes keyed by path tuples (3.3+) or by name and an
  `AttrsDescriptor` (3.2);
- the active driver slot, the per-device kernel caches, `load_binary`'s return shape;
- every patch of Triton's classes (`ClassPatch`: launcher `run` wrappers, the offline backend's
  GPU/offline split of `JITFunction.compile` and `Autotuner` state) and every private attribute
  jitguard reads (kernel registry, autotuner choices, the listener's positional `cache_hit`).

Importing this module imports Triton.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import triton
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction

from jitguard.events import ParamSpec

TRITON_VERSION: str = triton.__version__
VERSION: tuple[int, int] = tuple(int(p) for p in TRITON_VERSION.split(".")[:2])  # type: ignore[assignment]
HAS_KNOBS: bool = VERSION >= (3, 4)
# Before 3.3, tl.dot takes no operand under 16 rows or columns (jitguard.kernels' token tiles).
MIN_DOT_SIZE: int = 16 if VERSION < (3, 3) else 8

if HAS_KNOBS:
    import triton.knobs as _knobs

TRITON_DIR = os.path.dirname(os.path.abspath(triton.__file__))


# --- hook slots -------------------------------------------------------------------------------
HOOK_SLOTS = ("pre_compile", "post_compile", "listener")


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




# --- two sides in one process: a GPU and the offline backend -------------------------------------
#
# `split_sides(side)` gives the side that is active at each access its own compiler choice and
# autotune state. `side` (the offline backend) answers: active() -> bool, keys_only() -> bool,
# compile_keys_only(src, target, options) -> a stub kernel, bench(kernel_call, quantiles) -> ms,
# tuned_offline(autotuner). Each replaced attribute keeps the GPU side's value in the instance slot
# Triton itself uses, so restoring the patch leaves every kernel and autotuner as Triton has them.

_OFFLINE_CONFIGS = "_jitguard_offline_configs"  # an autotuner's choices made offline


class _SideCompiler:
    """`JITFunction.compile`: the compiler Triton captured per kernel, skipped while keys-only.

    Triton stores `triton.compiler.compile` on each kernel when it builds a binder (3.2: once, on the
    first call), so patching `triton.compiler.compile` misses kernels that ran before; deciding here,
    on every compile, does not.
    """

    def __init__(self, side: Any) -> None:
        self.side = side

    def __get__(self, jit_fn: Any, owner: Any = None) -> Any:
        if jit_fn is None:
            return self
        if self.side.keys_only() and self.side.active():
            return self.side.compile_keys_only
        try:
            return jit_fn.__dict__["compile"]
        except KeyError:
            raise AttributeError("compile") from None

    def __set__(self, jit_fn: Any, compiler: Any) -> None:
        jit_fn.__dict__["compile"] = compiler


class _SideAutotuneConfigs:
    """`Autotuner.cache` ({tuning key: chosen config}): Triton's dict for GPUs, another offline."""

    def __init__(self, side: Any) -> None:
        self.side = side

    def __get__(self, tuner: Any, owner: Any = None) -> Any:
        if tuner is None:
            return self
        if self.side.active():
            self.side.tuned_offline(tuner)
            return tuner.__dict__.setdefault(_OFFLINE_CONFIGS, {})
        return tuner.__dict__.setdefault("cache", {})

    def __set__(self, tuner: Any, configs: Any) -> None:
        if self.side.active():
            tuner.__dict__[_OFFLINE_CONFIGS] = configs
            tuner.__dict__.setdefault("cache", {})  # made offline: it still needs one for the GPU
        else:
            tuner.__dict__["cache"] = configs


def _benchmark_on_active_driver(kernel_call: Any, quantiles: Any = None, **kwargs: Any) -> Any:
    """Triton 3.2 picks an autotuner's benchmarker at decoration: one decorated offline gets this."""
    return active_driver().get_benchmarker()(kernel_call, quantiles=quantiles, **kwargs)


class _SideBenchmarker:
    """`Autotuner.do_bench`: the side's timer offline; otherwise what Triton would pick.

    Triton picks it once per autotuner (3.2: at decoration, 3.6+: on first use, then cached) from
    whichever driver is active then: picked offline, the fake timer would time later GPU autotunes.
    """

    def __init__(self, side: Any) -> None:
        self.side = side
        self.triton_property = Autotuner.__dict__.get("do_bench")  # 3.6+: a cached_property; 3.2: None

    def __get__(self, tuner: Any, owner: Any = None) -> Any:
        if tuner is None:
            return self
        if self.side.active():
            return self.side.bench
        if self.triton_property is not None:
            return self.triton_property.func(tuner)  # not cached: this may be the offline side's read
        return tuner.__dict__.get("do_bench", _benchmark_on_active_driver)

    def __set__(self, tuner: Any, benchmarker: Any) -> None:
        tuner.__dict__["do_bench"] = _benchmark_on_active_driver if benchmarker is self.side.bench else benchmarker


class _SideDiskCache:
    """`Autotuner.cache_results`: off offline, so fake timings never reach Triton's disk cache."""

    def __init__(self, side: Any) -> None:
        self.side = side

    def __get__(self, tuner: Any, owner: Any = None) -> Any:
        if tuner is None:
            return self
        return False if self.side.active() else tuner.__dict__.get("cache_results", False)

    def __set__(self, tuner: Any, value: Any) -> None:
        tuner.__dict__["cache_results"] = value


def split_sides(side: Any) -> ClassPatch:
    """Install the GPU/offline split of Triton's compiler choice and autotune state (see above)."""
    patch = ClassPatch()
    patch.replace(JITFunction, "compile", _SideCompiler(side))
    patch.replace(Autotuner, "cache", _SideAutotuneConfigs(side))
    patch.replace(Autotuner, "do_bench", _SideBenchmarker(side))
    patch.replace(Autotuner, "cache_results", _SideDiskCache(side))
    return patch


def forget_offline_autotune_choices(tuner: Any) -> None:
    """Drop the configs an autotuner chose offline (its GPU choices stay)."""
    tuner.__dict__.pop(_OFFLINE_CONFIGS, None)


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
    from triton.runtime import jit as triton_jit
    registry = getattr(triton_jit, "_triton_jit_function_registry", None) or {}
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
    names = ("num_warps", "num_stages", "num_ctas", "enable_fp_fusion", "launch_cooperative_grid", "maxnreg")
    return {n: compile_info[n] for n in names if n in compile_info}


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
    frame = start_frame
    depth = 0
    while frame is not None and depth < 16:
        if frame.f_code.co_name == "run" and frame.f_locals.get("self") is jit_fn:
            return frame
        frame = frame.f_back
        depth += 1
    return None


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
    frame = start_frame
    depth = 0
    while frame is not None and depth < 24:
        if frame.f_code.co_name in ("_bench", "kernel_call") and frame.f_code.co_filename.startswith(TRITON_DIR):
            return True
        frame = frame.f_back
        depth += 1
    return False


def autotuner_on_stack(start_frame: Any) -> Any:
    """The `Autotuner` whose `run` (or benchmark) led to this compile, or None: the `self` of the
    nearest Triton frame that is one. Read on the compile path only (never on a cache hit)."""
    frame = start_frame
    depth = 0
    while frame is not None and depth < 32:
        if frame.f_code.co_filename.startswith(TRITON_DIR):
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, Autotuner):
                return candidate
        frame = frame.f_back
        depth += 1
    return None


def autotune_config_names(tuner: Any) -> set[str]:
    """Every name an autotuner's configs set: their kwargs, and the launch options they choose."""
    names: set[str] = set()
    for config in getattr(tuner, "configs", None) or []:
        names.update(getattr(config, "kwargs", None) or {})
        names.update(option for option in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                     if getattr(config, option, None) is not None)
    return names


def user_call_site(start_frame: Any, skip_dirs: tuple[str, ...]) -> str:
    """'path:line' of the first frame outside Triton, torch and jitguard."""
    frame = start_frame
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip_dirs) and not filename.startswith("<"):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
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
    names = param_names(jit_fn)
    out: list[tuple[str, Any]] = []
    for option in ("do_not_specialize", "do_not_specialize_on_alignment"):
        for entry in getattr(jit_fn, option, None) or []:
            if isinstance(entry, str) and entry not in names:
                out.append((option, entry))
            elif isinstance(entry, int) and not 0 <= entry < len(names):
                out.append((option, entry))
    return out


# =================================================================================================
# --- autotune: bucketed tuning keys and tuning observation -------------------------------------
# Added for jitguard.autotune (bucketed_autotune.py) and tuning records (tuning_recorder.py).
# Facts relied on, identical in Triton 3.2 .. 3.9: `Autotuner.run` builds its tuning key as
# `tuple([_args[k] for k in self.keys if k in _args] + [str(a.dtype) for tensor args])` and looks
# it up in `self.cache` ({key: Config}); a benchmark run sets `self.bench_time` and
# `self.configs_timings` (a new dict) on the tuner; a 3.6+ disk-cache hit sets only the latter.
# =================================================================================================

def autotuner_type() -> type:
    """Triton's `Autotuner` class."""
    from triton.runtime.autotuner import Autotuner
    return Autotuner


def is_autotuner(obj: Any) -> bool:
    return isinstance(obj, autotuner_type())


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


class _BucketedConfigs(dict):
    """The tuner's {tuning key: Config} dict, storing and finding configs per bucket of the key.

    A real dict holding bucketed keys, so code that copies, clears or refills it with dict methods
    (jitguard's no_recompiles isolation, Triton's own code) works on it unchanged.
    """

    def __init__(self, entries: Any, tuner: Any) -> None:
        super().__init__(entries)
        self.tuner = tuner

    def _bucket(self, key: Any) -> Any:
        state = self.tuner.__dict__
        last = state.get("_jitguard_last_key")
        if last is not None and last[0] is key:  # Triton looks the same key tuple up twice per launch
            return last[1]
        slots = state.get("_jitguard_key_slots")
        if not slots or type(key) is not tuple:
            return key
        bucketed = list(key)
        for position, rule in slots:
            if position < len(bucketed):
                bucketed[position] = rule(bucketed[position])
        result = tuple(bucketed)
        state["_jitguard_last_key"] = (key, result)
        return result

    def __contains__(self, key: Any) -> bool:
        return dict.__contains__(self, self._bucket(key))

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self, self._bucket(key))

    def __setitem__(self, key: Any, config: Any) -> None:
        dict.__setitem__(self, self._bucket(key), config)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, self._bucket(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self, self._bucket(key), default)


class _BucketedConfigSlot:
    """`cache` on a bucketing tuner: the slot Triton (or the offline backend) keeps, holding a
    `_BucketedConfigs`; a plain dict found there (a fresh offline context) is converted once.

    `owners`: the tuner's classes from its own up to Triton's Autotuner, the only places a `cache`
    descriptor can sit (the offline backend installs one on Autotuner); looked up on every launch.
    """

    def __init__(self, owners: tuple) -> None:
        self.owners = owners

    def _below(self) -> Any:
        for klass in self.owners:
            attribute = klass.__dict__.get("cache")  # not getattr: a miss would raise and catch
            if attribute is not None:
                return attribute if hasattr(type(attribute), "__set__") else None
        return None

    def __get__(self, tuner: Any, owner: Any = None) -> Any:
        if tuner is None:
            return self
        below = self._below()
        storage = below.__get__(tuner, owner) if below is not None else tuner.__dict__.setdefault("cache", {})
        if type(storage) is not _BucketedConfigs:
            storage = _BucketedConfigs(storage, tuner)
            self.__set__(tuner, storage)
        return storage

    def __set__(self, tuner: Any, value: Any) -> None:
        if type(value) is not _BucketedConfigs:
            value = _BucketedConfigs(value or {}, tuner)
        below = self._below()
        if below is not None:
            below.__set__(tuner, value)
        else:
            tuner.__dict__["cache"] = value


def _bucketing_class(cls: type) -> type:
    """A subclass of `cls` (no new fields: instances switch to it in place) that buckets tuning keys."""

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Put the call's bucketed key positions on the tuner before Triton's `run` builds its key.
        state = self.__dict__
        if len(args) > state["_jitguard_last_key_index"]:  # every key positional: the common case
            state["_jitguard_key_slots"] = state["_jitguard_all_slots"]
        else:
            given = set(state["_jitguard_arg_names"][:len(args)]) | set(kwargs)
            present = [k for k in self.keys if k in given]
            rules = state["_jitguard_rules"]
            state["_jitguard_key_slots"] = [(i, rules[k]) for i, k in enumerate(present) if k in rules]
        return super(sub, self).run(*args, **kwargs)

    mro = cls.__mro__
    owners = mro[:mro.index(autotuner_type()) + 1]
    namespace = {"__module__": __name__, "cache": _BucketedConfigSlot(owners), "run": run, "_jitguard_bucketing": True}
    sub: type[Any] = type(f"Bucketed{cls.__name__}", (cls,), namespace)
    return sub


_bucketing_classes: dict[type, type] = {}


def bucket_autotuner_keys(tuner: Any, rules: dict[str, Callable[[Any], Any]]) -> None:
    """Make `tuner` (a Triton Autotuner) keep one chosen config per bucket of its key values.

    `rules[name](value)` maps a value of key parameter `name` to its bucket. The tuner stays an
    instance of its class (a subclass with no new fields is swapped in), and the kernel still
    receives the true values: only the lookup in its config cache is bucketed.
    """
    cls = type(tuner)
    if cls.__dict__.get("_jitguard_bucketing"):
        cls = cls.__mro__[1]
    sub = _bucketing_classes.get(cls)
    if sub is None:
        sub = _bucketing_classes[cls] = _bucketing_class(cls)
    arg_names = autotuner_arg_names(tuner)
    keys = autotuner_key_names(tuner)
    state = tuner.__dict__
    state["_jitguard_arg_names"] = arg_names
    state["_jitguard_rules"] = dict(rules)
    state["_jitguard_all_slots"] = [(i, rules[k]) for i, k in enumerate(keys) if k in rules]
    indices = [arg_names.index(k) for k in keys if k in arg_names]
    # A key name that is no argument drops out of Triton's key: take the slow path to stay in step.
    state["_jitguard_last_key_index"] = max(indices) if len(indices) == len(keys) and indices else len(arg_names) + 1
    tuner.__class__ = sub


_autotune_observers: list[Callable[..., None]] = []
_observer_patch = ClassPatch()  # Autotuner.run wrapped while any observer is installed
_observing = threading.local()  # .tuner: the tuner whose run is being observed in this thread


def passes_through_hooks(exc: BaseException) -> bool:
    """Whether an exception raised by a jitguard hook or observer is a verdict meant for the host
    (`RecompileError` in error mode), not an internal failure to swallow."""
    return bool(getattr(exc, "jitguard_verdict", False))


def _observing_run(beneath: Callable) -> Callable:
    """`Autotuner.run` that calls `beneath` and tells the observers about a tuning it made."""

    def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        state = tuner.__dict__
        timings_before = state.get("configs_timings")
        if getattr(_observing, "tuner", None) is tuner:  # another wrapper stacked over ours: observe once
            return beneath(tuner, *args, **kwargs)
        outer, _observing.tuner = getattr(_observing, "tuner", None), tuner
        bench_time_before = state.get("bench_time")
        try:
            result = beneath(tuner, *args, **kwargs)
        finally:
            _observing.tuner = outer
        timings = state.get("configs_timings")
        if timings is not None and timings is not timings_before:  # a tuning happened in this call
            bench_time = state.get("bench_time")
            from_disk = bench_time is bench_time_before  # 3.6+ disk-cache hit: timings read, nothing run
            for observer in list(_autotune_observers):
                try:
                    observer(tuner, args, kwargs, dict(timings), None if from_disk else bench_time, from_disk)
                except Exception as exc:  # an observer must never break the host's launch
                    if passes_through_hooks(exc):
                        raise
        return result

    # Its own marker, not `__jitguard_wrapper__`: call capture must still wrap this run.
    run.__jitguard_observer__ = True  # type: ignore[attr-defined]
    return run


def add_autotune_observer(observer: Callable[..., None]) -> None:
    """Call `observer(tuner, args, kwargs, configs_timings, bench_s, from_disk)` after each tuning.

    Costs one extra call per autotuned launch while any observer is installed; nothing after the
    last one is removed (`Autotuner.run` goes back through `ClassPatch`).
    """
    Autotuner = autotuner_type()
    if not _observer_patch.active:
        _observer_patch.replace(Autotuner, "run", _observing_run(Autotuner.__dict__["run"]))
    if observer not in _autotune_observers:
        _autotune_observers.append(observer)


def remove_autotune_observer(observer: Callable[..., None]) -> None:
    if observer in _autotune_observers:
        _autotune_observers.remove(observer)
    if not _autotune_observers:
        _observer_patch.restore()  # a tool that wrapped run over ours keeps its wrapper, which still works


# --- copies of a kernel with other demotion lists (the cost check) ---------------------------------

def jit_function_copy(jit_fn: JITFunction, do_not_specialize: list,
                      do_not_specialize_on_alignment: list) -> JITFunction:
    """A new JITFunction over the same Python function with the given demotion lists, of the
    original's class (a Gluon kernel's copy is a Gluon kernel: 3.5+'s `GluonJITFunction`).

    `JITFunction(fn, version, do_not_specialize, do_not_specialize_on_alignment, debug, noinline, ...)`
    is the same in 3.2-3.9; 3.5+ registers every JITFunction by `module:qualname`, so the
    original's registry entry is put back (the copy must not replace the user's kernel there).
    """
    from triton.runtime import jit as triton_jit

    registry = getattr(triton_jit, "_triton_jit_function_registry", None)
    registry_key = f"{jit_fn.fn.__module__}:{jit_fn.fn.__qualname__}"
    saved = registry.get(registry_key) if registry is not None else None
    cls = type(jit_fn) if isinstance(jit_fn, triton_jit.JITFunction) else triton_jit.JITFunction
    copy = cls(jit_fn.fn, do_not_specialize=list(do_not_specialize),
               do_not_specialize_on_alignment=list(do_not_specialize_on_alignment),
               debug=getattr(jit_fn, "debug", None), noinline=getattr(jit_fn, "noinline", None))
    if registry is not None and saved is not None:
        registry[registry_key] = saved
    return copy


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
