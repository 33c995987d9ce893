"""Install a compile bundle's entries into this process's Triton cache, so each planned variant loads
instead of compiling.

A bundle is code: it is installed only where a user asks (`jitguard.warmup(plan, bundle=...)`,
`jitguard run --bundle`, `JITGUARD_BUNDLE`). Every member is checked before anything is written
(bundle_format.read_bundle: plain files under `cache/<entry>/` only; each file's sha256 the manifest's).
An entry is installed only when what enters Triton's key matches this process: the Triton build, the
target arch (where this process knows it), the compiler (ptxas) version, the environment knobs, and
the kernel's source (where the caller resolved the kernel); host-side modules also need this Python ABI
and platform. Each mismatch skips its entries with one line naming the component that differs, and
those variants compile as before. Triton only ever finds an entry under its own key, so nothing
installed can stand in for another kernel. Entries already in the cache are left as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from jitguard.runtime.arrival import BUNDLE_MARKER
from jitguard.runtime.bundle_format import GROUP_PREFIX, BundleContents, content_problems, local_group, read_bundle
from jitguard.runtime.cache_miss import write_key_sidecar

ENV_VAR = "JITGUARD_BUNDLE"


@dataclass
class InstallResult:
    """What an install did: entries written, entries the cache already held, and one line per skip."""

    path: str
    installed: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    skipped_entries: int = 0

    def summary(self) -> str:
        return (f"[jitguard] bundle {self.path}: {len(self.installed)} entries installed, {len(self.present)} "
                f"already cached, {self.skipped_entries} skipped")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _by_kind(manifest: dict[str, Any], kind: str) -> list[str]:
    return [e for e, r in manifest["entries"].items() if isinstance(r, dict) and r.get("kind") == kind]


def _key_mismatches(manifest: dict[str, Any], arch: int | None) -> list[str]:
    """Lines naming each component of the kernels' cache key that differs here (empty: they may load)."""
    from jitguard import triton_cache

    lines = []
    target = manifest.get("target") or {}
    if arch is not None and target.get("arch") not in (None, arch):
        lines.append(f"target differs (bundle: {target.get('backend')} arch {target.get('arch')}, here: arch {arch})")
    if target.get("arch") is not None:
        here = triton_cache.backend_key(str(target.get("backend")), int(target["arch"]),
                                        int(target.get("warp_size", 32)))
        there = (manifest.get("compiler") or {}).get("backend_key")
        if there != here:
            lines.append(f"compiler differs (bundle: {there}, here: {here})")
    env_here, env_there = triton_cache.cache_key_env(), manifest.get("env") or {}
    for knob in sorted(set(env_here) | set(env_there)):
        if env_here.get(knob) != env_there.get(knob):
            lines.append(f"knob {knob} differs (bundle: {env_there.get(knob)!r}, here: {env_here.get(knob)!r})")
    return lines


def _triton_mismatch(manifest: dict[str, Any]) -> str | None:
    from jitguard import triton_cache
    from jitguard.triton_compat import TRITON_VERSION

    there = manifest.get("triton") or {}
    here_sha = _sha(triton_cache.triton_build_key())
    if there.get("build_key_sha256") == here_sha:
        return None
    there_sha = str(there.get("build_key_sha256"))[:12]
    return (f"Triton build differs (bundle: Triton {there.get('version')} build {there_sha}, "
            f"here: Triton {TRITON_VERSION} build {here_sha[:12]})")


def _python_mismatch(manifest: dict[str, Any]) -> str | None:
    from jitguard import triton_cache

    there, here = manifest.get("python") or {}, triton_cache.host_platform()
    differs = [k for k in ("ext_suffix", "platform") if there.get(k) != here.get(k)]
    if not differs:
        return None
    return "Python ABI or platform differs (" + ", ".join(
        f"{k} bundle: {there.get(k)}, here: {here.get(k)}" for k in differs) + ")"


def _source_mismatches(manifest: dict[str, Any], kernels: dict[str, Any]) -> dict[str, str]:
    """{kernel label: line} for each kernel the caller resolved whose source hash is not the bundle's."""
    from jitguard import triton_cache

    lines = {}
    for kernel in manifest.get("kernels") or []:
        jit_fn = kernels.get(kernel.get("kernel"))
        if jit_fn is None:
            continue
        here = triton_cache.kernel_source_hash(jit_fn)
        if here != kernel.get("source_hash"):
            lines[kernel["kernel"]] = (f"kernel {kernel['kernel']} ({kernel.get('module')}): source differs (bundle: "
                                       f"{str(kernel.get('source_hash'))[:12]}, here: {here[:12]})")
    return lines


def select_entries(contents: BundleContents, arch: int | None, kernels: dict[str, Any],
                    result: InstallResult) -> list[str]:
    """The entries that may be installed; each one left out is counted and its reason said once."""
    manifest, where = contents.manifest, contents.path
    every = list(manifest["entries"])
    triton_line = _triton_mismatch(manifest)
    if triton_line:
        result.skipped.append(f"{where}: {triton_line}: nothing installed")
        result.skipped_entries = len(every)
        return []
    chosen = set(every)

    def drop(entries: list[str], line: str) -> None:
        dropped = [e for e in entries if e in chosen]
        if dropped:
            chosen.difference_update(dropped)
            result.skipped_entries += len(dropped)
            result.skipped.append(f"{where}: {line}: {len(dropped)} entr{'y' if len(dropped) == 1 else 'ies'} skipped")

    for line in _key_mismatches(manifest, arch):
        drop(_by_kind(manifest, "kernel") + _by_kind(manifest, "autotune"), line)
    python_line = _python_mismatch(manifest)
    if python_line:
        drop(_by_kind(manifest, "host_module"), python_line)
    for label, line in _source_mismatches(manifest, kernels).items():
        drop([e for e, r in manifest["entries"].items() if isinstance(r, dict) and r.get("kernel") == label], line)
    for entry, problem in content_problems(contents).items():
        record = manifest["entries"].get(entry) or {}
        kernel = f" (kernel {record['kernel']})" if isinstance(record, dict) and record.get("kernel") else ""
        if entry in chosen:
            drop([entry], f"entry {entry[:16]}{kernel}: {problem}")
    return [e for e in every if e in chosen]


def _write_file(directory: str, name: str, data: bytes) -> None:
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.tmp.")
    with os.fdopen(handle, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(directory, name))


def _install_entry(cache_dir: str, entry: str, files: dict[str, bytes], marker: bytes) -> bool:
    """Write one entry (its group file last: Triton finds a kernel through it); False when already cached."""
    directory = os.path.join(cache_dir, entry)
    groups = [n for n in files if n.startswith(GROUP_PREFIX)]
    if all(os.path.exists(os.path.join(directory, n)) for n in (groups or list(files))):
        return False
    os.makedirs(directory, exist_ok=True)
    for name, data in files.items():
        if not name.startswith(GROUP_PREFIX):
            _write_file(directory, name, data)
    if groups:
        _write_file(directory, BUNDLE_MARKER, marker)
    for name in groups:
        _write_file(directory, name, local_group(files[name], directory))
    return True


def install_bundle(bundle: str | os.PathLike, cache_dir: str | None = None, arch: int | None = None,
                   kernels: dict[str, Any] | None = None) -> InstallResult:
    """Check `bundle` and install what matches into Triton's cache (`cache_dir`, default this process's).

    `arch`: this process's target arch, when known (entries for another are skipped and said);
    `kernels`: {kernel label: JIT function} whose sources are compared with the bundle's.
    Raises `bundle_format.BundleError` when the file is refused whole (a member that is no plain cache file).
    """
    from jitguard import triton_cache

    path = os.fspath(bundle)
    contents = read_bundle(path)
    result = InstallResult(path=path)
    chosen = select_entries(contents, arch, kernels or {}, result)
    target_dir = cache_dir or triton_cache.triton_cache_dir()
    marker = json.dumps({"bundle": os.path.basename(path)}).encode("utf-8")
    sidecars = _key_sidecars(contents.manifest)
    for entry in chosen:
        if _install_entry(target_dir, entry, contents.entries[entry], marker):
            result.installed.append(entry)
            if entry in sidecars:  # what the entry's key holds, for naming a later miss (runtime/cache_miss.py)
                write_key_sidecar(os.path.join(target_dir, entry), sidecars[entry])
        else:
            result.present.append(entry)
    return result


def _key_sidecars(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{entry: its key components} for each kernel entry the manifest names a specialization for."""
    from jitguard import triton_cache

    target = manifest.get("target") or {}
    where = triton_cache.target_words(str(target.get("backend")), target.get("arch"), target.get("warp_size"))
    common = {"triton_build": (manifest.get("triton") or {}).get("build_key_sha256"), "target": where,
              "compiler": (manifest.get("compiler") or {}).get("backend_key"), "env": manifest.get("env") or {}}
    sidecars = {}
    for kernel in manifest.get("kernels") or []:
        for entry, specialization in (kernel.get("specializations") or {}).items():
            sidecars[entry] = dict(common, source=kernel.get("source_hash"), specialization=specialization)
    return sidecars


def install_bundle_from_env(write_line: Any) -> InstallResult | None:
    """Install the bundle `JITGUARD_BUNDLE` names (once per process; servers started by others set it).

    Says each skip and the summary through `write_line`; a refused bundle is one line, never an exception.
    """
    from jitguard.runtime.bundle_format import BundleError

    path = os.environ.get(ENV_VAR, "").strip()
    if not path or _FROM_ENV.get(path) == os.getpid():
        return None
    _FROM_ENV[path] = os.getpid()
    try:
        result = install_bundle(path)
    except (BundleError, OSError) as exc:
        write_line(f"[jitguard] {ENV_VAR}: {exc}")
        return None
    for line in result.skipped:
        write_line(f"[jitguard] bundle: {line}")
    write_line(result.summary())
    return result


_FROM_ENV: dict[str, int] = {}  # bundle path -> the pid that installed it (a fork child installs again)
