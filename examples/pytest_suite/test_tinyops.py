"""jitguard's pytest marker on a tiny kernel package: the stock kernel recompiles, the fixed one does not.

Run from the repository root:  pytest examples/pytest_suite
See jitguard's message for the stock kernel:  pytest examples/pytest_suite --runxfail
"""

import pytest
import torch
from tinyops import fixed, stock

from jitguard import RecompileError

# Decode batch sizes a server sees one after another: 16 is divisible by 16, 17 is not, 1 is special.
DECODE_BATCH_SIZES = (16, 17, 1, 32)
HIDDEN = 64


def run_decode_steps(scale_rows, device: str) -> None:
    x = torch.randn(max(DECODE_BATCH_SIZES), HIDDEN, device=device)
    for num_tokens in DECODE_BATCH_SIZES:
        out = scale_rows(x[:num_tokens], 2.0)
        if device != "cpu":  # the offline backend compiles but launches nothing: check maths on a GPU only
            torch.testing.assert_close(out, x[:num_tokens] * 2.0)


@pytest.mark.xfail(raises=RecompileError, strict=True,
                   reason="stock scale_rows_kernel specializes num_tokens (see --runxfail for jitguard's message)")
@pytest.mark.no_recompiles(warmup=1)
def test_stock_kernel_recompiles_across_batch_sizes(jitguard_backend):
    run_decode_steps(stock.scale_rows, jitguard_backend.device)


@pytest.mark.no_recompiles(warmup=1)
def test_fixed_kernel_compiles_once(jitguard_backend):
    run_decode_steps(fixed.scale_rows, jitguard_backend.device)
