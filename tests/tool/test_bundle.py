"""Compile bundles: built offline once, loaded in a fresh process with an empty Triton cache, every
planned variant arrives from the bundle and nothing compiles; each mismatch or unsafe member is refused
with one line naming what differs, and nothing wrong is installed."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

import jitguard
from jitguard import triton_cache
from jitguard.runtime.bundle_format import BundleError
from jitguard.runtime.bundle_install import install_bundle
from jitguard.startup.bundle_build import build_bundle
from jitguard.startup.plan import build_plan
from tests import kernels_for_tests as K

torch = pytest.importorskip("torch")
REPO = Path(__file__).resolve().parents[2]


def _traffic() -> None:
    x, y = torch.zeros(64), torch.zeros(64)
    for n in (1, 16, 17):
        K.add_one_kernel[(1,)](x, y, n, BLOCK=64)
    K.add_one_dns_name[(1,)](x, y, 5, BLOCK=64)


LOADER = textwrap.dedent('''
    import json, sys
    import jitguard
    from tests.tool.test_bundle import _traffic
    with jitguard.offline(compile=True):
        with jitguard.watch() as rec:
            result = jitguard.warmup(sys.argv[1], bundle=sys.argv[2], quiet=True)
            warm = len(rec.events)
            _traffic()
    print(json.dumps({"arrived": [e.arrived for e in rec.events], "after_warmup": len(rec.events) - warm,
                      "loaded": len(result.loaded), "cold": len(result.cold)}))
''')


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(plan file, bundle file) for the test kernels' four variants, built offline in a child process."""
    where = tmp_path_factory.mktemp("bundle")
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        _traffic()
    plan = where / "plan.json"
    plan.write_text(json.dumps(build_plan(rec.events)))
    bundle = where / "kernels.bundle.tgz"
    result = build_bundle(plan, bundle)
    assert result.kernel_entries == 4 and not result.failures, result.summary()
    return plan, bundle


def _rewrite(bundle: Path, out: Path, change) -> Path:  # type: ignore[no-untyped-def]
    """A copy of `bundle` with `change(name, data) -> (name, data) | None` applied to each member."""
    with tarfile.open(bundle) as src, tarfile.open(out, "w:gz") as dst:
        for member in src.getmembers():
            handle = src.extractfile(member)
            changed = change(member.name, handle.read() if handle else b"")
            if changed is not None:
                info = tarfile.TarInfo(changed[0])
                info.size = len(changed[1])
                dst.addfile(info, io.BytesIO(changed[1]))
    return out


def _manifest(bundle: Path) -> dict:
    with tarfile.open(bundle) as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        return json.loads(handle.read())


def test_a_fresh_process_loads_every_planned_variant_from_the_bundle(built: tuple[Path, Path], tmp_path: Path) -> None:
    plan, bundle = built
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "empty-cache"),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", LOADER, str(plan), str(bundle)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"arrived": ["bundle"] * 4, "after_warmup": 0, "loaded": 4, "cold": 0}, done.stderr
    assert "4 loaded (4 from the bundle)" in done.stderr


def test_the_manifest_says_what_the_entries_were_built_for(built: tuple[Path, Path]) -> None:
    manifest = _manifest(built[1])
    assert manifest["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
    assert manifest["triton"]["version"] == jitguard.triton_compat.TRITON_VERSION
    assert manifest["env"] == triton_cache.cache_key_env()
    kinds = sorted(e["kind"] for e in manifest["entries"].values())
    assert kinds.count("kernel") == 4 and "host_module" in kinds  # cuda_utils at least, built with no GPU
    assert {k["kernel"] for k in manifest["kernels"]} == {"add_one_kernel", "add_one_dns_name"}
    assert all(len(digest) == 64 for e in manifest["entries"].values() for digest in e["files"].values())


def test_a_tampered_entry_is_skipped_and_the_others_install(built: tuple[Path, Path], tmp_path: Path) -> None:
    victim, kernel = next((e, r["kernel"]) for e, r in _manifest(built[1])["entries"].items() if r["kind"] == "kernel")

    def tamper(name: str, data: bytes) -> tuple[str, bytes]:
        return (name, data + b"\0") if name.startswith(f"cache/{victim}/") and name.endswith(".cubin") else (name, data)

    bundle = _rewrite(built[1], tmp_path / "tampered.tgz", tamper)
    result = install_bundle(bundle, cache_dir=str(tmp_path / "cache"))
    assert [line for line in result.skipped if victim[:16] in line] == [
        f"{bundle}: entry {victim[:16]} (kernel {kernel}): file {kernel}.cubin's content differs from "
        "the manifest's sha256 (tampered or corrupt): 1 entry skipped"]
    assert not (tmp_path / "cache" / victim).exists()
    assert len(result.installed) == len(_manifest(built[1])["entries"]) - 1


@pytest.mark.parametrize("member, why", [
    ("cache/../../escaped.txt", "outside cache/<entry>/<file>"),
    ("/etc/jitguard-absolute", "outside cache/<entry>/<file>"),
    ("cache/ENTRY/sub/file.json", "outside cache/<entry>/<file>"),
])
def test_a_member_escaping_the_cache_refuses_the_whole_bundle(built: tuple[Path, Path], tmp_path: Path,
                                                               member: str, why: str) -> None:
    evil = tmp_path / "evil.tar"
    with tarfile.open(built[1]) as src, tarfile.open(evil, "w") as dst:
        for m in src.getmembers():
            handle = src.extractfile(m)
            dst.addfile(m, io.BytesIO(handle.read() if handle else b""))
        info = tarfile.TarInfo(member)
        info.size = 1
        dst.addfile(info, io.BytesIO(b"x"))
    cache = tmp_path / "cache"
    with pytest.raises(BundleError, match=re.escape(f"refused, nothing installed: member {member!r} is {why}")):
        install_bundle(evil, cache_dir=str(cache))
    assert not cache.exists() and not (tmp_path / "escaped.txt").exists()


def test_a_link_member_refuses_the_whole_bundle(built: tuple[Path, Path], tmp_path: Path) -> None:
    evil = tmp_path / "link.tar"
    with tarfile.open(built[1]) as src, tarfile.open(evil, "w") as dst:
        for m in src.getmembers():
            handle = src.extractfile(m)
            dst.addfile(m, io.BytesIO(handle.read() if handle else b""))
        link = tarfile.TarInfo("cache/ENTRY/__grp__k.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        dst.addfile(link)
    with pytest.raises(BundleError, match=re.escape("member 'cache/ENTRY/__grp__k.json' is a link")):
        install_bundle(evil, cache_dir=str(tmp_path / "cache"))
    assert not (tmp_path / "cache").exists()


def test_another_triton_build_installs_nothing(built: tuple[Path, Path], tmp_path: Path) -> None:
    def other_build(name: str, data: bytes) -> tuple[str, bytes]:
        if name != "manifest.json":
            return name, data
        manifest = json.loads(data)
        manifest["triton"]["build_key_sha256"] = "0" * 64
        return name, json.dumps(manifest).encode()

    bundle = _rewrite(built[1], tmp_path / "other-build.tgz", other_build)
    result = install_bundle(bundle, cache_dir=str(tmp_path / "cache"))
    assert result.installed == [] and len(result.skipped) == 1
    assert result.skipped[0].startswith(f"{bundle}: Triton build differs (bundle: Triton ")
    assert result.skipped[0].endswith(": nothing installed")


def test_another_knob_value_skips_the_kernels_naming_the_knob(built: tuple[Path, Path], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    knobs = triton_cache.cache_key_env()
    if not knobs:
        pytest.skip(f"Triton {jitguard.triton_compat.TRITON_VERSION} puts no environment knob in its cache key")
    knob = sorted(knobs)[0]
    monkeypatch.setenv(knob, "7" if knobs[knob] != "7" else "8")
    if triton_cache.cache_key_env() == knobs:
        pytest.skip(f"{knob} is read once per process by this Triton")
    result = install_bundle(built[1], cache_dir=str(tmp_path / "cache"))
    line = next(line for line in result.skipped if knob in line)
    assert line == (f"{built[1]}: knob {knob} differs (bundle: {knobs[knob]!r}, here: "
                    f"{triton_cache.cache_key_env()[knob]!r}): 4 entries skipped")
    kernel_entries = [e for e, r in _manifest(built[1])["entries"].items() if r["kind"] == "kernel"]
    assert not any((tmp_path / "cache" / e).exists() for e in kernel_entries)


def test_a_kernel_whose_source_changed_is_skipped_by_name(built: tuple[Path, Path], tmp_path: Path) -> None:
    # The plan's add_one_kernel resolved to a kernel with other source: its entries are not installed.
    result = install_bundle(built[1], cache_dir=str(tmp_path / "cache"), kernels={"add_one_kernel": K.add_one_dnsa})
    line = next(line for line in result.skipped if "source differs" in line)
    assert line.startswith(f"{built[1]}: kernel add_one_kernel (tests.kernels_for_tests): source differs (bundle: ")
    assert line.endswith("): 3 entries skipped")
    kernel_of = {e: r.get("kernel") for e, r in _manifest(built[1])["entries"].items()}
    assert {kernel_of[e] for e in result.installed if kernel_of[e]} == {"add_one_dns_name"}


def test_another_arch_skips_the_kernels(built: tuple[Path, Path], tmp_path: Path) -> None:
    result = install_bundle(built[1], cache_dir=str(tmp_path / "cache"), arch=80)
    assert f"{built[1]}: target differs (bundle: cuda arch 90, here: arch 80): 4 entries skipped" in result.skipped


GUARDED = textwrap.dedent('''
    import sys
    import torch
    import jitguard
    from jitguard.runtime.bundle_install import install_bundle
    from tests import kernels_for_tests as K
    install_bundle(sys.argv[1])
    x, y = torch.zeros(64), torch.zeros(64)
    with jitguard.offline(compile=True):
        try:
            with jitguard.no_recompiles(warmup=1):
                K.add_one_kernel[(1,)](x, y, 16, BLOCK=64)
                K.add_one_kernel[(1,)](x, y, 17, BLOCK=64)
        except jitguard.RecompileError as failure:
            print(str(failure))
''')


def test_a_bundle_load_after_warm_up_fails_the_guard_and_says_where_it_came_from(built: tuple[Path, Path],
                                                                                  tmp_path: Path) -> None:
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "empty-cache"),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", GUARDED, str(built[1])], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Expected no new Triton variants after warm-up (the first call of each kernel), "
                               "but 1 was compiled (0 compiled here, 1 loaded (1 from a bundle) in ")
    assert any(line.startswith("  variant #2 at call 2 (loaded from a bundle)") for line in lines)


def test_a_cold_compile_beside_bundled_entries_names_what_differs(built: tuple[Path, Path], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    install_bundle(built[1])
    there = _manifest(built[1])["env"].get("TRITON_DEFAULT_FP_FUSION")
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1" if there in ("0", "false") else "0")
    here = triton_cache.cache_key_env().get("TRITON_DEFAULT_FP_FUSION")
    assert here != there
    with jitguard.offline(compile=True):
        jitguard.triton_compat.forget_compiled_variants(K.add_one_dns_name)
        with jitguard.watch() as rec:
            K.add_one_dns_name[(1,)](torch.zeros(64), torch.zeros(64), 5, BLOCK=64)
        jitguard.triton_compat.forget_compiled_variants(K.add_one_dns_name)
    assert rec.events[0].arrived == "cold"
    assert rec.events[0].cache_miss == {"entries": 1, "differs": [
        f"knob TRITON_DEFAULT_FP_FUSION ({there!r} there, {here!r} here)"]}


def test_the_command_names_a_source_that_is_no_plan_and_writes_nothing(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jitguard.cli import main

    source = tmp_path / "notes.json"
    source.write_text("not json")
    result = CliRunner().invoke(main, ["bundle", str(source), "-o", str(tmp_path / "b.tgz")])
    assert result.exit_code == 2
    assert f"{source}: not a readable JSON plan or report" in result.output
    assert not (tmp_path / "b.tgz").exists()
