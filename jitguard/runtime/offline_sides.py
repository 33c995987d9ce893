"""Two sides in one process, a GPU and the offline backend: each keeps its own compiler choice and
autotune state.

`split_sides(side)` gives the side that is active at each access its own value of four attributes of
Triton's classes. `side` (the offline backend) answers: active() -> bool, keys_only() -> bool,
compile_keys_only(src, target, options) -> a stub kernel, bench(kernel_call, quantiles) -> ms,
tuned_offline(autotuner). Each replaced attribute keeps the GPU side's value in the instance slot
Triton itself uses, so restoring the patch leaves every kernel and autotuner as Triton has them.

Importing this module imports Triton (through `jitguard.triton_compat`).
"""

from __future__ import annotations

from typing import Any

from jitguard import triton_compat
from jitguard.triton_compat import ClassPatch

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
    return triton_compat.active_driver().get_benchmarker()(kernel_call, quantiles=quantiles, **kwargs)


class _SideBenchmarker:
    """`Autotuner.do_bench`: the side's timer offline; otherwise what Triton would pick.

    Triton picks it once per autotuner (3.2: at decoration, 3.6+: on first use, then cached) from
    whichever driver is active then: picked offline, the fake timer would time later GPU autotunes.
    """

    def __init__(self, side: Any) -> None:
        self.side = side
        self.triton_property = triton_compat.autotuner_benchmarker_property()

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
    jit_function, autotuner = triton_compat.jit_function_type(), triton_compat.autotuner_type()
    patch = ClassPatch()
    patch.replace(jit_function, "compile", _SideCompiler(side))
    patch.replace(autotuner, "cache", _SideAutotuneConfigs(side))
    patch.replace(autotuner, "do_bench", _SideBenchmarker(side))
    patch.replace(autotuner, "cache_results", _SideDiskCache(side))
    return patch


def forget_offline_autotune_choices(tuner: Any) -> None:
    """Drop the configs an autotuner chose offline (its GPU choices stay)."""
    tuner.__dict__.pop(_OFFLINE_CONFIGS, None)
