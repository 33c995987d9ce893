"""A driver for `jitguard run --offline`: the traffic of a few decode steps, on CPU tensors.

    jitguard run --offline --dir logs -- python drive.py
    jitguard report logs

Under --offline, Triton compiles for sm_90 and launches do nothing, so the tensors only need the right
shape, dtype and alignment: allocate them on the CPU (`device="cuda"` fails where torch has no CUDA).
The kernels live in `rows.py`, an importable module, so the report can compile them again to price
each demotion it advises.
"""

import torch
from rows import add_one, scale_rows

for num_tokens in (16, 17, 1, 32, 5):  # batch sizes as a server forms them
    scale_rows(torch.zeros(num_tokens, 256), 2.0)
    add_one(torch.zeros(num_tokens))
