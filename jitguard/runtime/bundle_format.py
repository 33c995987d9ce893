"""The compile bundle file: a tar holding `manifest.json` and Triton cache entries (`cache/<entry>/<file>`).

Pure: no Triton, no torch. Packing reads a Triton cache directory; reading checks every member before
anything is used: a member must be a regular file named `manifest.json` or `cache/<entry>/<file>` with
plain names (nothing absolute, no `..`, no links or devices), and each file's sha256 must be the
manifest's. A kernel entry's group file (`__grp__*.json`) holds absolute paths in Triton's cache; the
bundle stores it with bare file names, and an install writes it back with the paths of the local cache.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
from dataclasses import dataclass, field
from typing import Any

FORMAT = "jitguard-bundle/1"
MANIFEST = "manifest.json"
GROUP_PREFIX = "__grp__"
_NAME = re.compile(r"[A-Za-z0-9_\-]+")  # a cache entry: Triton's base32 / base64 key
_FILE = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]*")
MAX_MEMBER_BYTES = 512 * 1024 * 1024


class BundleError(ValueError):
    """The bundle file cannot be used at all (unreadable, a member that is not a plain cache file, no manifest)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def entry_kind(files: list[str]) -> str:
    """What a cache entry holds: "kernel" (a group file), "host_module" (a built C module), "autotune" (chosen
    configs), else "other"."""
    if any(f.startswith(GROUP_PREFIX) for f in files):
        return "kernel"
    if any(f.endswith(".so") for f in files):
        return "host_module"
    if any(f.endswith(".autotune.json") for f in files):
        return "autotune"
    return "other"


def portable_group(data: bytes) -> bytes:
    """A group file with its children named by file name only (Triton writes absolute paths)."""
    children = json.loads(data.decode("utf-8")).get("child_paths")
    if isinstance(children, dict):
        children = {name: os.path.basename(str(path)) for name, path in children.items()}
    return json.dumps({"child_paths": children}, sort_keys=True).encode("utf-8")


def local_group(data: bytes, entry_dir: str) -> bytes:
    """A bundle's group file with its children's paths in the local cache entry `entry_dir`."""
    children = json.loads(data.decode("utf-8")).get("child_paths")
    if isinstance(children, dict):
        children = {name: os.path.join(entry_dir, os.path.basename(str(path))) for name, path in children.items()}
    return json.dumps({"child_paths": children}).encode("utf-8")


def read_cache_entries(cache_dir: str, skip_kinds: tuple[str, ...] = ()) -> dict[str, dict[str, bytes]]:
    """{entry: {file: bytes}} for every entry of a Triton cache directory (group files made portable);
    temporary files and lock files are left out."""
    entries: dict[str, dict[str, bytes]] = {}
    for entry in sorted(os.listdir(cache_dir)):
        path = os.path.join(cache_dir, entry)
        if not os.path.isdir(path) or not _NAME.fullmatch(entry):
            continue
        files: dict[str, bytes] = {}
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if name == "lock" or ".tmp." in name or not os.path.isfile(full) or os.path.islink(full):
                continue
            with open(full, "rb") as f:
                data = f.read()
            files[name] = portable_group(data) if name.startswith(GROUP_PREFIX) else data
        if files and entry_kind(list(files)) not in skip_kinds:
            entries[entry] = files
    return entries


def write_bundle(path: str, manifest: dict[str, Any], entries: dict[str, dict[str, bytes]]) -> None:
    """Write the tar: the manifest first (with every file's sha256 added), then each entry's files."""
    manifest = dict(manifest)
    listed = manifest.setdefault("entries", {})
    for entry, files in entries.items():
        record = listed.setdefault(entry, {})
        record["kind"] = entry_kind(list(files))
        record["files"] = {name: sha256_hex(data) for name, data in files.items()}
    tmp = path + ".tmp"
    with tarfile.open(tmp, "w:gz") as tar:
        _add_member(tar, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8"))
        for entry, files in entries.items():
            for name, data in files.items():
                _add_member(tar, f"cache/{entry}/{name}", data)
    os.replace(tmp, path)


def _add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


@dataclass
class BundleContents:
    """A bundle read back: its manifest and {entry: {file: bytes}}, every member already checked for shape."""

    path: str
    manifest: dict[str, Any]
    entries: dict[str, dict[str, bytes]] = field(default_factory=dict)


def member_problem(member: tarfile.TarInfo) -> str | None:
    """Why an archive member may not be used, or None for a plain cache file or the manifest."""
    if not member.isreg():
        what = "a link" if member.issym() or member.islnk() else "a device" if member.isdev() else "not a regular file"
        return f"member {member.name!r} is {what}"
    if member.size > MAX_MEMBER_BYTES:
        return f"member {member.name!r} is {member.size} bytes, over the {MAX_MEMBER_BYTES} a cache file may have"
    if member.name == MANIFEST:
        return None
    parts = member.name.split("/")
    if len(parts) != 3 or parts[0] != "cache" or not _NAME.fullmatch(parts[1]) or not _FILE.fullmatch(parts[2]):
        return f"member {member.name!r} is outside cache/<entry>/<file> (it would escape the cache directory)"
    return None


def read_bundle(path: str) -> BundleContents:
    """Read and shape-check every member; raises BundleError naming the file and the first bad member."""
    try:
        tar = tarfile.open(path, "r:*")
    except (OSError, tarfile.TarError) as exc:
        raise BundleError(f"{path}: not a readable bundle ({type(exc).__name__}: {exc})") from exc
    contents = BundleContents(path=path, manifest={})
    with tar:
        members = tar.getmembers()
        for member in members:  # every member is judged before any is read
            problem = member_problem(member)
            if problem:
                raise BundleError(f"{path}: refused, nothing installed: {problem}")
        for member in members:
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
            if member.name == MANIFEST:
                contents.manifest = _parse_manifest(path, data)
            else:
                _, entry, name = member.name.split("/")
                contents.entries.setdefault(entry, {})[name] = data
    if not contents.manifest:
        raise BundleError(f"{path}: refused, nothing installed: no {MANIFEST}")
    return contents


def _parse_manifest(path: str, data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path}: {MANIFEST} is not JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{path}: {MANIFEST} is not a {FORMAT} manifest")
    if not isinstance(manifest.get("entries"), dict):
        raise BundleError(f"{path}: {MANIFEST} lists no entries")
    return manifest


def content_problems(contents: BundleContents) -> dict[str, str]:
    """{entry: why} for each entry whose files are not exactly the manifest's (missing, extra, other sha256)."""
    problems: dict[str, str] = {}
    listed: dict[str, Any] = contents.manifest["entries"]
    for entry, record in listed.items():
        expected = record.get("files") if isinstance(record, dict) else None
        found = contents.entries.get(entry, {})
        if not isinstance(expected, dict) or not expected:
            problems[entry] = "the manifest lists no files for it"
            continue
        for name, digest in expected.items():
            if name not in found:
                problems[entry] = f"file {name} is missing from the bundle"
            elif sha256_hex(found[name]) != digest:
                problems[entry] = f"file {name}'s content differs from the manifest's sha256 (tampered or corrupt)"
            if entry in problems:
                break
        extra = sorted(set(found) - set(expected))
        if entry not in problems and extra:
            problems[entry] = f"file {extra[0]} is not in the manifest"
    for entry in sorted(set(contents.entries) - set(listed)):
        problems[entry] = "the entry is not in the manifest"
    return problems
