"""Variants of the sample kernel `rms_norm_rows` over 1..64 tokens, loaded from a path you give.

Run it on kernels/rows.py before and after `jitguard fix` (on a copy) to see the fix take effect:

    python examples/codemod/sample_variants.py /tmp/cm/kernels/rows.py
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import torch

import jitguard


def main(path: Path) -> None:
    spec = importlib.util.spec_from_file_location("sample_rows", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with jitguard.offline(compile=False):  # Triton 3.2's @triton.autotune asks for a driver when it decorates
        spec.loader.exec_module(module)
    hidden = 256
    weight = torch.ones(hidden)
    with jitguard.offline(compile=False), jitguard.watch() as recorder, contextlib.redirect_stderr(io.StringIO()):
        for tokens in range(1, 65):
            x = torch.randn(tokens, hidden)
            module.rms_norm_rows[(tokens,)](x, weight, torch.empty_like(x), tokens, hidden, 1e-6, BLOCK=hidden)
    print(f"{path}: rms_norm_rows compiled {recorder.variants('rms_norm_rows')} variants over 1..64 tokens")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: sample_variants.py PATH/TO/rows.py")
    main(Path(sys.argv[1]))
