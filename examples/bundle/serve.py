"""A toy server for the bundle story: warm up from a plan when given one, then serve three requests.

    python serve.py [plan.json]
"""

import sys

import torch
from ops import scale_rows

import jitguard

if __name__ == "__main__":
    if len(sys.argv) > 1:
        jitguard.warmup(sys.argv[1], quiet=True)
    jitguard.mark_serving()
    x, out = torch.ones(128), torch.empty(128)
    for n_cols in (1, 64, 100):  # three requests of different widths
        scale_rows[(1,)](x, out, n_cols, BLOCK=128)
