"""An autotune storm: a kernel autotuned on a token count, driven over 1..64 tokens.

    cd examples/autotune_storm
    python storm.py                                          # 64 tunings, 2176 configs timed
    jitguard fix --bucket scale_tokens:num_tokens storm.py   # @triton.autotune -> @jitguard.autotune(bucket=...)
    python storm.py                                          # 7 tunings, 238 configs timed

Runs on a CPU-only machine through jitguard's offline backend (real Triton keys and tuner, the
compiler skipped); the counts are the ones a GPU run makes. Token counts 1..8 are the warm-up, the
rest arrive "during serving". The monitor logs each tuning on stderr; stdout gets the summary.
"""

import torch
import triton
import triton.language as tl

import jitguard
from jitguard.tuning.recorder import record_tunings
from jitguard.tuning.records import format_autotune_summary, remedy_lines, summarize_tunings

# 34 configs, as in a real MoE-style kernel: 17 tile sizes x 2 warp counts.
CONFIGS = [triton.Config({"BLOCK_N": bn, "ROWS": rows}, num_warps=w)
           for bn, rows in [(32, 1), (32, 2), (32, 4), (64, 1), (64, 2), (64, 4), (64, 8), (128, 1), (128, 2),
                            (128, 4), (128, 8), (256, 1), (256, 2), (256, 4), (512, 1), (512, 2), (1024, 1)]
           for w in (4, 8)]


@triton.autotune(CONFIGS, key=["num_tokens", "hidden"])
@triton.jit
def scale_tokens(x_ptr, out_ptr, num_tokens, hidden, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    for r in range(ROWS):
        row = tl.program_id(0) * ROWS + r
        cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (row < num_tokens) & (cols < hidden)
        x = tl.load(x_ptr + row * hidden + cols, mask=mask)
        tl.store(out_ptr + row * hidden + cols, x * 2, mask=mask)


def main() -> None:
    hidden = 4096
    with jitguard.offline(compile=False), jitguard.watch(mode="log"), record_tunings() as recorder:
        for num_tokens in range(1, 65):
            if num_tokens == 9:
                jitguard.mark_serving()
            x = torch.zeros(num_tokens, hidden)
            grid = lambda meta, n=num_tokens: (triton.cdiv(n, meta["ROWS"]), triton.cdiv(hidden, meta["BLOCK_N"]))
            scale_tokens[grid](x, torch.empty_like(x), num_tokens, hidden)
    for name, entry in summarize_tunings(recorder.records).items():
        print(format_autotune_summary(name, entry))
        for line in remedy_lines(name, entry):
            print(line)


if __name__ == "__main__":
    main()
