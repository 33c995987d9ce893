"""An autotune storm and its fix: a kernel autotuned on a token count, driven over 1..64 tokens.

    python examples/autotune_storm/storm.py              # @triton.autotune(key=["num_tokens", ...])
    python examples/autotune_storm/storm.py --bucketed   # @jitguard.autotune(..., bucket={"num_tokens": "pow2"})

Runs on a CPU-only machine through jitguard's offline backend (real Triton keys and tuner, the
compiler skipped); the counts are the ones a GPU run makes. Token counts 1..8 are the warm-up, the
rest arrive "during serving".
"""

import argparse
import json

import torch
import triton
import triton.language as tl

import jitguard
from jitguard.tuning.recorder import record_tunings
from jitguard.tuning.records import remedy_lines, summarize_tunings

# 34 configs, as in a real MoE-style kernel: 17 tile sizes x 2 warp counts.
CONFIGS = [triton.Config({"BLOCK_N": bn, "ROWS": rows}, num_warps=w)
           for bn, rows in [(32, 1), (32, 2), (32, 4), (64, 1), (64, 2), (64, 4), (64, 8), (128, 1), (128, 2),
                            (128, 4), (128, 8), (256, 1), (256, 2), (256, 4), (512, 1), (512, 2), (1024, 1)]
           for w in (4, 8)]


def build(bucketed: bool):
    if bucketed:
        decorate = jitguard.autotune(CONFIGS, key=["num_tokens", "hidden"], bucket={"num_tokens": "pow2"})
    else:
        decorate = triton.autotune(CONFIGS, key=["num_tokens", "hidden"])

    @decorate
    @triton.jit
    def scale_tokens(x_ptr, out_ptr, num_tokens, hidden, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
        for r in range(ROWS):
            row = tl.program_id(0) * ROWS + r
            cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
            mask = (row < num_tokens) & (cols < hidden)
            x = tl.load(x_ptr + row * hidden + cols, mask=mask)
            tl.store(out_ptr + row * hidden + cols, x * 2, mask=mask)

    return scale_tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bucketed", action="store_true", help="use jitguard.autotune with a pow2 bucket")
    args = parser.parse_args()
    hidden = 4096
    with jitguard.offline(compile=False), jitguard.watch(mode="log"), record_tunings() as recorder:
        kernel = build(args.bucketed)
        for num_tokens in range(1, 65):
            if num_tokens == 9:
                jitguard.mark_serving()
            x = torch.zeros(num_tokens, hidden)
            grid = lambda meta, n=num_tokens: (triton.cdiv(n, meta["ROWS"]), triton.cdiv(hidden, meta["BLOCK_N"]))
            kernel[grid](x, torch.empty_like(x), num_tokens, hidden)
    summary = summarize_tunings(recorder.records)
    for name, entry in summary.items():
        shown = {k: v for k, v in entry.items() if k not in ("keys_tuned", "values_seen", "tuning_s")}
        print(f"{name}: {json.dumps(shown)}")
        for line in remedy_lines(name, entry):
            print(line)


if __name__ == "__main__":
    main()
