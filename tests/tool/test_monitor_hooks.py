"""The monitor as a good citizen: chains earlier hooks, restores them, survives its own errors,
notices replacement, and acts by mode; events reach the per-process NDJSON file as they happen."""

import json
import os

import pytest
import torch

import jitguard
from jitguard import triton_compat
from jitguard.runtime import monitor
from jitguard.runtime.argv_redaction import redact_argv
from tests import kernels_for_tests as k


@pytest.fixture(autouse=True)
def clean_state():
    monitor.uninstall()
    for kernel in (k.add_one_kernel, k.add_one_dns_name):
        for cache in triton_compat.all_kernel_caches(kernel):
            cache.clear()
    with jitguard.offline():
        yield
    monitor.uninstall()


def _compile(n, block=32, kernel=k.add_one_kernel):
    kernel[(1,)](torch.zeros(256), torch.zeros(256), n, BLOCK=block)


class RecordingHook:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append(kwargs.get("key"))
        return None


def test_previous_hooks_are_chained_and_restored():
    pre, post = RecordingHook(), RecordingHook()
    triton_compat.set_hook("pre_compile", pre)
    triton_compat.set_hook("post_compile", post)
    try:
        with jitguard.watch() as rec:
            _compile(3)
            _compile(16)
        assert len(rec.events) == 2
        assert len(pre.calls) == 2 and len(post.calls) == 2
        assert triton_compat.get_hook("pre_compile") is pre
        assert triton_compat.get_hook("post_compile") is post
    finally:
        triton_compat.set_hook("pre_compile", None)
        triton_compat.set_hook("post_compile", None)


def test_monitor_never_skips_a_compile_itself():
    with jitguard.watch() as rec:
        result = k.add_one_kernel[(1,)](torch.zeros(256), torch.zeros(256), 5, BLOCK=32)
    assert result is not None  # Triton returns None when a cache hook asks to skip
    assert rec.variants("add_one_kernel") == 1


def test_internal_error_is_logged_once_and_the_program_goes_on(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(triton_compat, "param_specs", broken)
    with jitguard.watch():
        _compile(3)
        _compile(16)
        _compile(1)
    err = capsys.readouterr().err
    assert err.count("[jitguard] internal error (reported once; the program goes on): ValueError: boom") == 1
    device = triton_compat.get_active_driver_raw().get_current_device()
    assert len(triton_compat.kernel_cache(k.add_one_kernel, device)) == 3  # every compile still happened


def test_replacement_by_another_tool_is_noticed(capsys):
    with jitguard.watch() as rec:
        other = RecordingHook()
        triton_compat.set_hook("pre_compile", other)  # a tool that does not chain
        _compile(3)
    assert len(rec.events) == 1  # still seen through the post-compile hook
    err = capsys.readouterr().err
    assert "another tool replaced Triton's pre_compile hook" in err
    assert triton_compat.get_hook("pre_compile") is other  # uninstall leaves the other tool in place
    triton_compat.set_hook("pre_compile", None)


def test_error_mode_raises_after_mark_serving_and_the_kernel_still_works():
    monitor.install(mode="error", summary=False)
    _compile(3)  # warm-up: fine
    jitguard.mark_serving()
    with pytest.raises(jitguard.RecompileError) as info:
        _compile(17 * 16)
    message = str(info.value)
    assert "add_one_kernel compiled during serving" in message
    assert "n: int32, value 3 -> int32 divisible by 16 (value 272)" in message
    assert 'fix: do_not_specialize_on_alignment=["n"]' in message
    _compile(17 * 16)  # compiled and cached: no second error


def test_warn_mode_warns_during_serving():
    monitor.install(mode="warn", summary=False)
    _compile(3)
    jitguard.mark_serving()
    with pytest.warns(jitguard.RecompileWarning, match="compiled during serving"):
        _compile(32)


def test_budget_per_kernel():
    monitor.install(mode="error", budget={"add_one_kernel": 2}, summary=False)
    _compile(3)
    _compile(16)
    with pytest.raises(jitguard.RecompileError, match="over its budget of 2"):
        _compile(1)


def test_events_reach_the_ndjson_file_as_they_happen(tmp_path):
    monitor.install(dir=str(tmp_path), summary=False)
    _compile(3)
    files = list(tmp_path.glob("*.ndjson"))
    assert len(files) == 1 and files[0].name.endswith(f"-{os.getpid()}.ndjson")
    lines = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert [r["type"] for r in lines] == ["process", "compile"]  # written before the process ends
    assert lines[1]["kernel"] == "add_one_kernel"
    assert lines[1]["params"]["n"] == {"kind": "int", "type": "i32", "spec": "plain", "value": None, "observed": 3}
    _compile(16)
    assert len(files[0].read_text().splitlines()) == 3


def test_summary_table_names_kernels_and_fix():
    mon = monitor.install(summary=False)
    for n in (1, 2, 16):
        _compile(n)
    text = "\n".join(mon.summary_lines())
    assert "add_one_kernel" in text and "n x2" in text and 'do_not_specialize=["n"]' in text


def test_argv_secrets_are_redacted():
    argv = ["serve", "--api-key", "sk-1", "--hf-token=abc", "--model", "m", "--password", "p"]
    assert redact_argv(argv) == ["serve", "--api-key", "***", "--hf-token=***", "--model", "m",
                                         "--password", "***"]


def test_a_tool_that_chains_on_top_raises_no_alarm(capsys):
    with jitguard.watch() as rec:
        ours = triton_compat.get_hook("post_compile")

        def chaining_hook(*args, **kwargs):  # like vLLM's monitor: installed later, calls the previous one
            return ours(*args, **kwargs)

        triton_compat.set_hook("post_compile", chaining_hook)
        jitguard.mark_serving()
        _compile(3)
        triton_compat.set_hook("post_compile", ours)
    assert len(rec.events) == 1
    assert "another tool replaced" not in capsys.readouterr().err


def test_call_site_is_the_users_line_even_under_a_chaining_hook():
    with jitguard.watch() as rec:
        ours = triton_compat.get_hook("post_compile")
        triton_compat.set_hook("post_compile", lambda *a, **kw: ours(*a, **kw))
        _compile(5)
        triton_compat.set_hook("post_compile", ours)
    assert rec.events[0].call_site.startswith(__file__)
