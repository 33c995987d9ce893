"""One rule for which parameter a do_not_specialize entry demotes, as Triton reads it: the monitor's
warning, scan's JG104 and fix's "already demoted" agree that a negative index names nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jitguard.codemod.scan import scan_source
from jitguard.events import listed_parameter

NAMES = ["x_ptr", "n", "stride"]


@pytest.mark.parametrize("entry, demoted", [
    ("n", "n"), (1, "n"), (0, "x_ptr"), (2, "stride"),
    (-1, None),  # Triton compares indices with positions: the last parameter stays specialized
    (3, None), ("m", None), (True, None), (1.0, None),
])
def test_the_parameter_an_entry_demotes(entry, demoted):
    assert listed_parameter(entry, NAMES) == demoted


def test_a_negative_index_is_named_by_the_monitor_and_by_scan(tmp_path: Path) -> None:
    source = textwrap.dedent('''
        import triton
        import triton.language as tl


        @triton.jit(do_not_specialize=[-1])
        def rows_kernel(x_ptr, num_tokens):
            tl.store(x_ptr + tl.arange(0, 16), 0.0, mask=tl.arange(0, 16) < num_tokens)
    ''')
    findings, _ = scan_source(source.encode(), "k.py")
    assert [f.message for f in findings if f.rule == "JG104"] == [
        "do_not_specialize lists index -1 but `rows_kernel` has 2 parameters (numbered from 0); "
        "Triton ignores it silently"]
    module = tmp_path / "neg_index_kernels.py"
    module.write_text(source)
    import importlib.util

    from jitguard import triton_compat
    spec = importlib.util.spec_from_file_location("neg_index_kernels", module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    assert triton_compat.unknown_demotion_names(loaded.rows_kernel) == [("do_not_specialize", -1)]
    assert not any(p.do_not_specialize for p in loaded.rows_kernel.params)  # what Triton itself did


def test_fix_adds_the_parameter_a_negative_index_did_not_demote(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jitguard.codemod.commands import fix_command

    kernel = tmp_path / "k.py"
    kernel.write_text("import triton\n\n\n@triton.jit(do_not_specialize=[-1])\ndef rows_kernel(x_ptr, num_tokens):\n"
                      "    pass\n")
    result = CliRunner().invoke(fix_command, ["--param", "rows_kernel:num_tokens", str(kernel)])
    assert result.exit_code == 0, result.output
    assert '@triton.jit(do_not_specialize=[-1, "num_tokens"])' in kernel.read_text()
