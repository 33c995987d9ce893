"""jitguard.price.price_cache: a demotion's price is computed once (in a child process, or in process by
`jitguard report` and `fix`), then read back.

The cache can only spare work (child processes, compiles): a miss, a corrupt file or an unwritable directory prices
the demotion as if there were no cache, and an "unknown" verdict is never kept.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import triton
import triton.language as tl

from jitguard.price import demotion_cost as dc
from jitguard.price import price_cache
from jitguard.price.demotion_cost import cost_in_subprocess
from tests.tool.test_demotion_cost import _variant

# Loaded by the import above, so this process has its code key (a kernel it never loaded is not cached).
PRICED = "tests.tool.test_demotion_cost:mask_bound_kernel"


@triton.jit
def mask_bound_kernel_edited(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 2, mask=mask)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(price_cache.CACHE_ENV, str(tmp_path))
    return tmp_path / "prices"


def _no_child(monkeypatch) -> list:
    """Refuse child processes from here on (as an OSError, which prices "unknown"); returns the
    list of refused starts."""
    refused: list = []

    def refuse(*args, **kwargs):
        refused.append(args)
        raise OSError("child refused by the test")
    monkeypatch.setattr(subprocess, "run", refuse)
    return refused


def test_a_price_is_computed_once_then_read_back_and_other_questions_are_asked_again(cache_dir, monkeypatch):
    first = cost_in_subprocess(PRICED, "n_elements", "do_not_specialize", [_variant("div16")])
    assert first.verdict == "costly" and "128-bit loads become 32-bit" in first.detail
    (stored,) = cache_dir.glob("*.json")
    assert json.loads(stored.read_text())["detail"] == first.detail
    refused = _no_child(monkeypatch)
    again = cost_in_subprocess(PRICED, "n_elements", "do_not_specialize", [_variant("div16")])
    assert (again.verdict, again.detail, again.alternative) == (first.verdict, first.detail, first.alternative)
    assert not refused, "a child process was started for a cached price"
    for kernel, demotion, spec in ((f"{__name__}:mask_bound_kernel_edited", "do_not_specialize", "div16"),
                                   (PRICED, "do_not_specialize_on_alignment", "div16"),
                                   (PRICED, "do_not_specialize", "one")):
        cost = cost_in_subprocess(kernel, "n_elements", demotion, [_variant(spec)])
        # A child was asked (and refused): the cache did not answer for other code or another question.
        assert cost.verdict == "unknown" and "could not start" in cost.detail, (kernel, demotion, spec)
    assert len(refused) == 3
    assert len(list(cache_dir.glob("*.json"))) == 1, "an unknown verdict was kept"


def test_a_kernel_this_process_never_loaded_is_priced_but_never_kept(cache_dir, monkeypatch):
    refused = _no_child(monkeypatch)
    cost = cost_in_subprocess("tests.tool.not_imported_anywhere:kernel", "n", "do_not_specialize", [_variant("div16")])
    assert cost.verdict == "unknown" and len(refused) == 1
    assert dc._price_cache_key("tests.tool.not_imported_anywhere:kernel", "n", "do_not_specialize", 90, []) is None
    assert dc._price_cache_key(PRICED, "n", "do_not_specialize", 90, []) is not None
    assert not cache_dir.exists() or not list(cache_dir.iterdir())
    assert price_cache.store("k" * 64, {"verdict": "unknown", "detail": "timed out"}) is False


def test_a_corrupt_or_foreign_file_is_a_miss(cache_dir):
    key = "a" * 64
    cache_dir.mkdir(parents=True)
    for text in ("{not json", json.dumps({"verdict": "unknown", "detail": "x"}), json.dumps(["free"]),
                 json.dumps({"verdict": "free", "detail": 3})):
        (cache_dir / f"{key}.json").write_text(text)
        assert price_cache.lookup(key) is None, text
    assert price_cache.store(key, {"verdict": "free", "detail": "same code"})
    assert price_cache.lookup(key) == {"verdict": "free", "detail": "same code"}
    assert not list(cache_dir.glob("*.tmp")), "a temporary file was left behind"


def test_an_unwritable_cache_or_one_switched_off_prices_as_if_there_were_none(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv(price_cache.CACHE_ENV, str(blocker))
    refused = _no_child(monkeypatch)
    cost = cost_in_subprocess(PRICED, "n_elements", "do_not_specialize", [_variant("div16")])
    assert cost.verdict == "unknown" and len(refused) == 1, "the cache failed instead of asking a child"
    assert price_cache.store("b" * 64, {"verdict": "free", "detail": "x"}) is False
    for off in ("off", "0", ""):
        monkeypatch.setenv(price_cache.CACHE_ENV, off)
        assert price_cache.prices_dir() is None
        assert price_cache.store("b" * 64, {"verdict": "free", "detail": "x"}) is False
        assert price_cache.lookup("b" * 64) is None


def test_the_default_place_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv(price_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert price_cache.prices_dir() == tmp_path / "jitguard" / "prices"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert price_cache.prices_dir() == tmp_path / ".cache" / "jitguard" / "prices"


def test_the_key_covers_every_input_of_a_price(monkeypatch):
    base = dict(kernel_code_key="code", param="n", demotion="do_not_specialize", arch=90,
                signature=[_variant("div16")], triton_version="3.6.0")
    keys = {price_cache.price_key(**base)}
    for field, other in (("kernel_code_key", "code2"), ("param", "m"), ("demotion", "do_not_specialize_on_alignment"),
                         ("arch", 100), ("signature", [_variant("one")]), ("triton_version", "3.2.0")):
        keys.add(price_cache.price_key(**{**base, field: other}))
    assert len(keys) == 7
    assert price_cache.price_key(**base) == price_cache.price_key(**base)
    # A development checkout's edit of the pricing code changes every key, without a version bump.
    real = price_cache._pricing_code()
    monkeypatch.setattr(price_cache, "_pricing_code", lambda: real + " edited")
    assert price_cache.price_key(**base) not in keys


def test_the_live_key_changes_with_the_triton_version(monkeypatch):
    """A price computed under one Triton is not read back under another (same kernel, same question)."""
    from jitguard import triton_compat
    from tests.tool.test_demotion_cost import mask_bound_kernel

    signature = [_variant("div16")]
    here = dc._price_key_of(mask_bound_kernel, "n_elements", "do_not_specialize", 90, signature)
    monkeypatch.setattr(triton_compat, "TRITON_VERSION", "0.0.1-other")
    other = dc._price_key_of(mask_bound_kernel, "n_elements", "do_not_specialize", 90, signature)
    assert here is not None and other is not None and here != other


def test_report_and_fix_pricing_in_process_share_the_cache_with_the_child_path(cache_dir, monkeypatch):
    """`jitguard report` and `fix` price through DemotionCostChecker.cost_for_report_kernel: a
    definitive price is kept, read back by another checker without compiling, and answers the same
    question asked through cost_in_subprocess without a child (and the other way round)."""
    from tests.tool.test_demotion_cost import _report_entry

    entry = _report_entry([_variant("div16")], module="tests.tool.test_demotion_cost")
    first = dc.DemotionCostChecker().cost_for_report_kernel(entry, "n_elements")
    assert first.verdict == "costly" and "128-bit loads become 32-bit" in first.detail
    assert len(list(cache_dir.glob("*.json"))) == 1
    monkeypatch.setattr(dc.DemotionCostChecker, "_compile", lambda *a: pytest.fail("a cached price was compiled"))
    again = dc.DemotionCostChecker().cost_for_report_kernel(entry, "n_elements")
    assert (again.verdict, again.detail, again.alternative) == (first.verdict, first.detail, first.alternative)
    refused = _no_child(monkeypatch)
    child = cost_in_subprocess(PRICED, "n_elements", "do_not_specialize", [_variant("div16")])
    assert (child.verdict, child.detail) == (first.verdict, first.detail) and not refused
    # Another question still compiles (here refused, so unknown, and not kept).
    monkeypatch.setattr(dc.DemotionCostChecker, "_compile", lambda *a: "compile refused by the test")
    other = dc.DemotionCostChecker().cost_for_report_kernel(
        _report_entry([_variant("div16")], advice="do_not_specialize_on_alignment",
                      module="tests.tool.test_demotion_cost"), "n_elements")
    assert other.verdict == "unknown" and "compile refused by the test" in other.detail, other.detail
    assert len(list(cache_dir.glob("*.json"))) == 1
