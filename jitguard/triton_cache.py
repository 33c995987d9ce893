"""Triton's disk cache, per Triton version (3.2 .. 3.9+): where entries live, what enters their keys,
and the host-side C modules Triton caches beside its kernels.

Used by compile bundles (`jitguard.startup.bundle_*`) and by the monitor to tell how a kernel arrived.
Importing this module imports Triton.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from jitguard.triton_compat import HAS_KNOBS, VERSION, all_kernel_caches, kernel_cache

if HAS_KNOBS:
    import triton.knobs as _knobs


def triton_cache_dir() -> str:
    """The directory Triton's file cache uses in this process (`TRITON_CACHE_DIR` or its default)."""
    if HAS_KNOBS:
        return str(_knobs.cache.dir)
    from triton.runtime.cache import default_cache_dir
    return os.getenv("TRITON_CACHE_DIR", "").strip() or default_cache_dir()


def cache_entry_name(hash_hex: str) -> str:
    """The directory name Triton gives the cache entry of a hex key (base32 from 3.3, base64 before)."""
    import triton.runtime.cache as cache_module
    encode = getattr(cache_module, "_base32", None) or cache_module._base64
    return str(encode(hash_hex))


def compiled_entry_dir(jit_fn: Any, device: int, key: Any) -> str | None:
    """The cache entry directory the compiled kernel under `key` was read from or written to; None if unknown."""
    compiled = kernel_cache(jit_fn, device).get(key)
    digest = getattr(compiled, "hash", None)
    if not isinstance(digest, str):
        return None
    return os.path.join(triton_cache_dir(), cache_entry_name(digest))


def remote_cache_active() -> bool:
    """Whether Triton reads its cache through its remote manager (`TRITON_CACHE_MANAGER` naming
    `RemoteCacheManager`, backed by `TRITON_REMOTE_CACHE_BACKEND`, e.g. its Redis backend)."""
    if HAS_KNOBS:
        manager = _knobs.cache.manager_class
        return manager is not None and getattr(manager, "__name__", "") == "RemoteCacheManager"
    return os.environ.get("TRITON_CACHE_MANAGER", "").endswith(":RemoteCacheManager")


def triton_build_key() -> str:
    """`triton_key()`: Triton's version plus hashes of its own files and `libtriton`; every cache key starts with it
    (it differs between wheels of one version built for different Pythons)."""
    try:
        from triton.runtime.cache import triton_key  # 3.3+
    except ImportError:
        from triton.compiler.compiler import triton_key
    return str(triton_key())


def cache_key_env() -> dict[str, str]:
    """The environment knobs Triton puts in every kernel's cache key, with this process's values."""
    from triton._C.libtriton import get_cache_invalidating_env_vars
    return {str(k): str(v) for k, v in get_cache_invalidating_env_vars().items()}


def backend_key(backend: str, arch: int, warp_size: int) -> str:
    """The backend part of the cache key for a target (for CUDA: the ptxas version and the arch)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    return str(make_backend(GPUTarget(backend, arch, warp_size)).hash())


def compiled_kernels(jit_fn: Any) -> list[Any]:
    """Every compiled kernel object `jit_fn` holds in memory, on every device."""
    return [k for cache in all_kernel_caches(jit_fn) for k in cache.values() if hasattr(k, "hash")]


def build_cuda_host_modules(kernels: list[Any], libcuda_dir: str | None) -> list[str]:
    """Build Triton's host-side C modules for `kernels` into the cache, as the first launch on a GPU would:
    `cuda_utils` (every version) and one `__triton_launcher` per signature (before 3.9; 3.9 launches through
    `cuda_utils`). Linked against the `libcuda.so.1` in `libcuda_dir` (a stub without a GPU: the module binds
    to the real driver where it loads; None: the real one). Loading them fails without a driver and is not
    needed: the modules are in the cache once built. Returns one line per module that could not be built."""
    from triton.backends.nvidia import driver as nvidia_driver

    if libcuda_dir is not None:
        os.environ["TRITON_LIBCUDA_PATH"] = libcuda_dir
        if HAS_KNOBS:
            _knobs.nvidia.libcuda_path = libcuda_dir
        nvidia_driver.libcuda_dirs.cache_clear()
        if hasattr(nvidia_driver, "library_dirs"):
            nvidia_driver.library_dirs.cache_clear()
    problems = []
    builders: list[tuple[str, Callable[[], Any]]] = [("cuda_utils", nvidia_driver.CudaUtils)]
    if VERSION < (3, 9):
        builders += [(f"launcher of {k.name}", _launcher_builder(nvidia_driver, k)) for k in kernels]
    for what, build in builders:
        try:
            build()
        except ImportError:
            pass  # built and cached; loading needs the real driver
        except Exception as exc:
            problems.append(f"{what}: {type(exc).__name__}: {exc}".splitlines()[0])
    return problems



def _launcher_builder(nvidia_driver: Any, compiled: Any) -> Callable[[], Any]:
    def build() -> Any:
        return nvidia_driver.CudaLauncher(compiled.src, compiled.metadata)
    return build


def kernel_source_hash(jit_fn: Any) -> str:
    """The hash of a kernel's source and the functions and globals it uses, as Triton keys it."""
    return str(getattr(jit_fn, "cache_key", ""))


def host_platform() -> dict[str, str]:
    """What Triton's host-module cache entries depend on besides their C source: the Python ABI and platform."""
    import platform
    import sysconfig

    return {"cache_tag": str(sys.implementation.cache_tag), "ext_suffix": str(sysconfig.get_config_var("EXT_SUFFIX")),
            "platform": ",".join([platform.machine(), platform.system(), *platform.architecture()])}


def redis_backend_path() -> str:
    """"module:Class" of a Redis backend for `TRITON_REMOTE_CACHE_BACKEND` that works with this Triton: its own
    where it starts (3.2, 3.3), else jitguard's (3.4 .. 3.9's reads `knobs.cache.redis`, which they lack)."""
    if HAS_KNOBS and not hasattr(_knobs.cache, "redis"):
        return "jitguard.runtime.triton_redis:RedisEntryStore"
    return "triton.runtime.cache:RedisRemoteCacheBackend"


def remote_cache_env() -> dict[str, str]:
    """The environment that makes a Triton process read its cache through Triton's remote manager and Redis."""
    return {"TRITON_CACHE_MANAGER": "triton.runtime.cache:RemoteCacheManager",
            "TRITON_REMOTE_CACHE_BACKEND": redis_backend_path()}


def remote_backend(entry: str) -> Any:
    """The remote cache backend for one cache entry: the class `TRITON_REMOTE_CACHE_BACKEND` names
    ("module:Class"), else the Redis backend `redis_backend_path()` names."""
    import importlib

    named = os.environ.get("TRITON_REMOTE_CACHE_BACKEND", "").strip() or redis_backend_path()
    module_name, _, class_name = named.partition(":")
    return getattr(importlib.import_module(module_name), class_name)(entry)


_BUILD_SHA: dict[str, str] = {}
_BACKEND_KEYS: dict[tuple[str, int, int], str] = {}


def build_key_sha() -> str:
    """sha256 of `triton_build_key()`, computed once per process."""
    if "sha" not in _BUILD_SHA:
        import hashlib
        _BUILD_SHA["sha"] = hashlib.sha256(triton_build_key().encode("utf-8")).hexdigest()
    return _BUILD_SHA["sha"]


def target_words(backend: str, arch: Any, warp_size: Any) -> str:
    return f"{backend} arch {arch} warp {warp_size}"


def key_components(jit_fn: Any, compiled: Any, specialization: str) -> dict[str, Any] | None:
    """What enters a compiled kernel's disk key, readably (see runtime/cache_miss.py); None for a stand-in kernel."""
    target = getattr(getattr(compiled, "metadata", None), "target", None)
    if target is None:
        return None
    where = (str(target.backend), int(target.arch), int(target.warp_size))
    if where not in _BACKEND_KEYS:
        _BACKEND_KEYS[where] = backend_key(*where)
    return {"triton_build": build_key_sha(), "source": kernel_source_hash(jit_fn), "target": target_words(*where),
            "compiler": _BACKEND_KEYS[where], "env": cache_key_env(), "specialization": specialization}
