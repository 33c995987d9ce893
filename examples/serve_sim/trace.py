"""A seeded request trace: arrival times, prompt lengths, output lengths.

Distribution (all drawn from one `random.Random(seed)`):

- arrivals: a Poisson process of `rate` requests per second (exponential gaps);
- prompt lengths: log-normal, median `prompt_median` tokens, sigma `prompt_sigma` (a long tail,
  like chat traces: most prompts short, a few long), rounded, clipped to [1, `prompt_max`];
- output lengths: log-normal, median `output_median` tokens, sigma 0.8, clipped to
  [1, `output_max`].

Decode batch sizes are not drawn: they are how many requests are decoding at each engine step,
which follows from arrivals, output lengths and `max_num_seqs`. The simulation reports the
token counts its steps actually ran (`step_tokens`), so a run's real batch sizes are on record.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """One request of the trace: when it arrives (seconds from the start) and its sizes."""

    rid: int
    arrival_s: float
    prompt_len: int
    output_len: int


@dataclass(frozen=True)
class TraceSpec:
    """Parameters of `make_trace` (see the module docstring for the distribution)."""

    num_requests: int = 48
    rate: float = 8.0
    prompt_median: float = 48.0
    prompt_sigma: float = 1.0
    prompt_max: int = 256
    output_median: float = 16.0
    output_max: int = 64
    seed: int = 0


def _lognormal_int(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    value = round(math.exp(rng.gauss(math.log(median), sigma)))
    return max(low, min(high, value))


def make_trace(spec: TraceSpec) -> list[Request]:
    """The requests of `spec`, in arrival order; the same seed gives the same trace."""
    rng = random.Random(spec.seed)
    now = 0.0
    requests = []
    for rid in range(spec.num_requests):
        if rid:
            now += rng.expovariate(spec.rate)
        prompt = _lognormal_int(rng, spec.prompt_median, spec.prompt_sigma, 1, spec.prompt_max)
        output = _lognormal_int(rng, spec.output_median, 0.8, 1, spec.output_max)
        requests.append(Request(rid, now, prompt, output))
    return requests


def describe_trace(requests: list[Request]) -> str:
    """One line: count, duration, prompt and output length quantiles."""
    def quantiles(values: list[int]) -> str:
        ordered = sorted(values)
        pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]
        return f"p50 {pick(0.5)}, p90 {pick(0.9)}, max {ordered[-1]}"
    duration = requests[-1].arrival_s if requests else 0.0
    return (f"{len(requests)} requests over {duration:.1f} s; "
            f"prompt tokens {quantiles([r.prompt_len for r in requests])}; "
            f"output tokens {quantiles([r.output_len for r in requests])}")
