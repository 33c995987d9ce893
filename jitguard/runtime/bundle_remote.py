"""Push a compile bundle into Triton's own remote cache (its Redis backend, or the class
`TRITON_REMOTE_CACHE_BACKEND` names), so a fleet of servers started with `TRITON_CACHE_MANAGER`
naming Triton's `RemoteCacheManager` loads each planned variant from it, with a cold local cache.

Entries are checked as for a local install (bundle_install): the Triton build, compiler, knobs, host
Python, each file's sha256; only matching entries are pushed, in the layout Triton's remote manager
reads (each file under `key_format.format(key=entry, filename=...)`, a kernel's group file listing its
children by name). No store of jitguard's own: Triton reads it as it reads any remote entry.
"""

from __future__ import annotations

import json
import os

from jitguard.runtime.bundle_format import GROUP_PREFIX, read_bundle
from jitguard.runtime.bundle_install import InstallResult, select_entries


def push_bundle(bundle: str | os.PathLike) -> InstallResult:
    """Push the matching entries of `bundle` to Triton's remote cache; `installed` lists the entries pushed."""
    from jitguard import triton_cache

    path = os.fspath(bundle)
    contents = read_bundle(path)
    result = InstallResult(path=path)
    for entry in select_entries(contents, None, {}, result):
        backend = triton_cache.remote_backend(entry)
        files = contents.entries[entry]
        for name, data in files.items():
            if name.startswith(GROUP_PREFIX):
                children = json.loads(data.decode("utf-8")).get("child_paths") or {}
                data = json.dumps({"child_paths": sorted(children)}).encode("utf-8")
            backend.put(name, data)
        result.installed.append(entry)
    return result
