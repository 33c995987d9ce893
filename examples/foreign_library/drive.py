"""Calls cut-cross-entropy's public ``linear_cross_entropy`` at a few token counts, as a training step would.

Run it under ``jitguard run --offline`` (no GPU needed) with the library installed, e.g. into ``lib/``:
``PYTHONPATH=lib jitguard run --offline --dir logs -- python drive.py``.
"""

import torch
from cut_cross_entropy import linear_cross_entropy

VOCAB, HIDDEN = 1000, 256
classifier = torch.randn(VOCAB, HIDDEN, dtype=torch.bfloat16)
for tokens in (1, 2, 16, 17):
    embeddings = torch.randn(tokens, HIDDEN, dtype=torch.bfloat16)
    linear_cross_entropy(embeddings, classifier, torch.randint(0, VOCAB, (tokens,)), impl="cce")
