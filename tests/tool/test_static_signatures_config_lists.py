"""Autotune configs built by code (a factory function, a comprehension, a loop of appends, another file of
the package) are read from the source to synthesize a kernel's signatures; configs the source does not
give leave the constexprs valued from their use, said in the price."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jitguard.codemod.config_lists import ModuleScope
from jitguard.codemod.demotions import Demotion
from jitguard.codemod.kernels import find_kernels
from jitguard.codemod.static_prices import price_scan_demotions
from jitguard.codemod.static_signatures import synthesize

HEADER = "import os\nimport triton\nimport triton.language as tl\n"

KERNEL = '''
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)
'''

# (case id, {file name: source}; the kernel is in kernels.py, decorated by DECORATOR, expected (BLOCK, num_warps))
CASES = [
    ("a-decorator-factory-in-the-same-file", {"kernels.py": '''
        def my_autotune():
            return triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=2)], key=["n"])
        @my_autotune()
     '''}, [(32, 2)]),
    ("a-factory-choosing-by-environment-returns-its-autotune", {"kernels.py": '''
        TUNE = os.getenv("TUNE") == "1"
        def best():
            return triton.Config(dict(BLOCK=256), num_warps=8)
        def tuned():
            if TUNE:
                return triton.autotune(configs=[triton.Config(dict(BLOCK=b), num_warps=4) for b in (64, 128)],
                                       key=["n"])
            return triton.heuristics({"BLOCK": lambda args: best().kwargs["BLOCK"]})
        @tuned()
     '''}, [(64, 4), (128, 4)]),
    ("a-comprehension-over-a-module-constant", {"kernels.py": '''
        SIZES = [16, 32]
        @triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=4 if b < 32 else 8) for b in SIZES],
                         key=["n"])
     '''}, [(16, 4), (32, 8)]),
    ("a-loop-of-appends-in-another-file-of-the-package", {"tuning.py": '''
        def make_configs():
            configs = []
            for block in [64, 128]:
                for stages in [2, 3]:
                    warps = 2 if block <= 64 else 4
                    configs.append(triton.Config({"BLOCK": block}, num_warps=warps, num_stages=stages))
            return configs
     ''', "kernels.py": '''
        from .tuning import make_configs
        @triton.autotune(configs=make_configs(), key=["n"])
     '''}, [(64, 2), (64, 2), (128, 4), (128, 4)]),
]


def _write(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "configs_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in files.items():
        body = textwrap.dedent(text)
        if name == "kernels.py":
            body += KERNEL.lstrip("\n")
        (package / name).write_text(HEADER + body)
    return package / "kernels.py"


def _synthesized(file: Path) -> Any:
    source = file.read_bytes()
    tree = ast.parse(source)
    (kernel,) = find_kernels(source, tree)
    return synthesize(kernel, scope=ModuleScope(tree, file))


@pytest.mark.parametrize(("files", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_autotune_configs_built_by_code_are_read(tmp_path: Path, files: dict[str, str],
                                                 expected: list[tuple[int, int]]) -> None:
    synthesized = _synthesized(_write(tmp_path, files))
    assert synthesized.reason is None, synthesized.reason
    assert not synthesized.configs_unread
    assert synthesized.configs_total == len(expected)
    groups = [(g[0]["params"]["BLOCK"]["value"], g[0]["options"].get("num_warps")) for g in synthesized.groups]
    assert groups == expected[:len(groups)]
    assert synthesized.assumed_constexprs == []


def test_configs_the_source_does_not_give_are_said_and_priced_from_use(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    file = _write(tmp_path, {"kernels.py": '''
        import json
        def from_disk():
            return [triton.Config(c) for c in json.loads(os.environ.get("TUNED", '[{"BLOCK": 32}]'))]
        @triton.autotune(configs=from_disk(), key=["n"])
     '''})
    synthesized = _synthesized(file)
    assert synthesized.configs_unread and synthesized.assumed_constexprs == ["BLOCK=64"]
    demotion = Demotion("k", "n", "do_not_specialize", "scan.json", str(file), 0, "do_not_specialize")
    (priced,) = price_scan_demotions([demotion], [file])
    assert priced.report_entry is not None
    cost = priced.report_entry["params"]["n"]["cost"]
    assert cost["verdict"] in ("free", "costly"), cost
    assert "autotune configs could not be read from the source" in cost["detail"]
    assert "assumed from their use: BLOCK=64" in cost["detail"]
