"""`jitguard.autotune`: `triton.autotune` that tunes once per bucket of a key value, not per value.

`@triton.autotune(configs, key=["num_tokens"])` benchmarks every config again for each new
`num_tokens`: a server sees hundreds of counts, each tuned on the request path. The drop-in
buckets the values before Triton's tuner looks them up, so one tuning serves a whole bucket:

    @jitguard.autotune(configs, key=["num_tokens", "hidden"], bucket={"num_tokens": "pow2"})
    @triton.jit
    def kernel(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr): ...

Driven over num_tokens = 1..64 it tunes 7 times (buckets 1, 2, 4, ..., 64) instead of 64. The
kernel still receives the true `num_tokens`: only the tuning key is bucketed. The cost: a config is
chosen per bucket, not per value (the config that won for the bucket's first value serves every
value in it). Everything else is `triton.autotune`'s, with the same arguments on each Triton version.
Two consequences to check before bucketing a key: `prune_configs_by` runs once per bucket, on the
arguments of the first value seen, so a pruning rule that makes a config *wrong* (not merely slow)
for other values of the bucket cannot be bucketed; and with `cache_results=True` Triton's disk cache
stays keyed on that first value, so a restart whose first value in a bucket differs benchmarks again.

Strategies (`bucket={param: strategy}`), all mapping a bucket's upper bound to itself:
- `"pow2"`: the next power of two >= the value (0 -> 0). `"log2"` is the same buckets (FlagGems'
  `libtuner` calls its strategy `"log"` and keys on the exponent).
- `"align:N"`: the value rounded up to a multiple of N.
- `"le:[1,2,4,8]"`: the smallest listed bound >= the value; values above the last bound share the
  last bound's bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

STRATEGY_FORMS = ('"pow2"', '"log2"', '"align:N"', '"le:[b1,b2,...]"')


class BucketError(ValueError):
    """A `bucket=` that cannot work: unknown strategy, or a parameter not in `key`."""


@dataclass(frozen=True)
class BucketStrategy:
    """One parsed strategy: `spec` as written, `apply(value)` gives the bucket (its upper bound)."""

    spec: str
    kind: str
    step: int = 0
    bounds: tuple[int, ...] = field(default=())

    def apply(self, value: int) -> int:
        if self.kind == "pow2":
            return value if value <= 1 else 1 << (value - 1).bit_length()
        if self.kind == "align":
            return -(-value // self.step) * self.step
        for bound in self.bounds:  # "le": few bounds, a linear scan is cheapest
            if value <= bound:
                return bound
        return self.bounds[-1]


def parse_strategy(spec: Any) -> BucketStrategy:
    """Parse `"pow2"`, `"log2"`, `"align:N"` or `"le:[...]"`; `BucketError` says what is accepted."""
    if not isinstance(spec, str):
        raise BucketError(f"strategy {spec!r} is not a string; use one of {', '.join(STRATEGY_FORMS)}")
    text = spec.strip()
    name, _, arg = text.partition(":")
    name = name.strip().lower()
    if name in ("pow2", "log2") and not arg:
        return BucketStrategy(text, "pow2")
    if name == "align" and arg:
        try:
            step = int(arg.strip())
        except ValueError:
            step = 0
        if step < 1:
            raise BucketError(f"strategy {spec!r}: align needs a positive integer, e.g. \"align:16\"")
        return BucketStrategy(text, "align", step=step)
    if name == "le" and arg:
        inner = arg.strip().removeprefix("[").removesuffix("]")
        try:
            bounds = tuple(sorted({int(part) for part in inner.split(",") if part.strip()}))
        except ValueError:
            bounds = ()
        if not bounds:
            raise BucketError(f"strategy {spec!r}: le needs integer bounds, e.g. \"le:[1,2,4,8,16]\"")
        return BucketStrategy(text, "le", bounds=bounds)
    raise BucketError(f"unknown strategy {spec!r}; use one of {', '.join(STRATEGY_FORMS)}")


def bucket_value(spec: str, value: int) -> int:
    """The bucket of `value` under strategy `spec` (e.g. `bucket_value("pow2", 5) == 8`)."""
    return parse_strategy(spec).apply(value)


def _kernel_label(fn: Any) -> str:
    """'name (file:line)' of the function being decorated, for error messages."""
    from jitguard import triton_compat

    jit_fn = triton_compat.unwrap_jit_function(fn)
    if jit_fn is not None:
        name = triton_compat.kernel_name(jit_fn)
        file, line = triton_compat.kernel_location(jit_fn)
        return f"{name} ({file}:{line})" if file else name
    code = getattr(fn, "__code__", None)
    name = str(getattr(fn, "__name__", "?"))
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code is not None else name


def _check_bucket(bucket: Any, key: Sequence[str], label: str) -> dict[str, BucketStrategy]:
    if not isinstance(bucket, Mapping):
        raise BucketError(f"jitguard.autotune on {label}: bucket= must be a dict {{param: strategy}}, "
                          f"got {type(bucket).__name__}")
    strategies: dict[str, BucketStrategy] = {}
    for param, spec in bucket.items():
        if param not in key:
            raise BucketError(f"jitguard.autotune on {label}: bucket names {param!r}, which is not in "
                              f"key={list(key)!r}; only key parameters can be bucketed")
        try:
            strategies[param] = parse_strategy(spec)
        except BucketError as exc:
            raise BucketError(f"jitguard.autotune on {label}: bucket {param!r}: {exc}") from None
    return strategies


def _value_rules(strategies: dict[str, BucketStrategy], label: str) -> dict[str, Callable[[Any], Any]]:
    """{param: value -> bucket}, run on every launch: the int check comes first and costs one `type()`."""
    def rule_for(param: str, strategy: BucketStrategy) -> Callable[[Any], Any]:
        apply = strategy.apply

        def rule(value: Any) -> Any:
            if type(value) is int:
                return apply(value)
            if isinstance(value, int) and not isinstance(value, bool):  # IntEnum and other int subclasses
                return apply(int(value))
            raise TypeError(f"jitguard.autotune on {label}: bucket {param!r} ({strategy.spec}) needs an int, "
                            f"got {type(value).__name__} {value!r}")
        return rule

    return {param: rule_for(param, strategy) for param, strategy in strategies.items()}


def autotune(configs: list, key: list[str], bucket: Mapping[str, str] | None = None, **kwargs: Any) -> Callable:
    """`triton.autotune(configs, key, **kwargs)`, with the values of the `bucket` parameters bucketed.

    `bucket={"num_tokens": "pow2"}` tunes once per power of two of `num_tokens`. Every other
    argument (`prune_configs_by`, `reset_to_zero`, `restore_value`, `pre_hook`, `post_hook`,
    `warmup`, `rep`, `do_bench`, `cache_results`, ...) goes to the installed Triton's autotune as
    is. A bad `bucket` raises `BucketError` when the kernel is decorated, naming kernel and
    parameter. With no `bucket` this is exactly `triton.autotune`.
    """
    key_names = [key] if isinstance(key, str) else list(key)

    def decorator(fn: Any) -> Any:
        import triton

        from jitguard.tuning.bucketed_tuner import bucket_autotuner_keys

        label = _kernel_label(fn)
        strategies = _check_bucket(bucket or {}, key_names, label)
        tuner = triton.autotune(configs, key, **kwargs)(fn)
        if strategies:
            bucket_autotuner_keys(tuner, _value_rules(strategies, label))
            tuner.jitguard_bucket = {param: s.spec for param, s in strategies.items()}
        return tuner

    return decorator


def bucket_of(tuner: Any) -> dict[str, str]:
    """{param: strategy} of a tuner made by `jitguard.autotune` ({} for a plain `triton.autotune`)."""
    return dict(getattr(tuner, "jitguard_bucket", None) or {})


def bucketed_values(tuner: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` ({key param: value}) as the tuner's cache sees them: bucketed params replaced."""
    rules = bucket_of(tuner)
    out = dict(values)
    for param, spec in rules.items():
        value = out.get(param)
        if isinstance(value, int) and not isinstance(value, bool):
            out[param] = bucket_value(spec, value)
    return out


def bucket_count(spec: str, values: Sequence[int]) -> int:
    """How many buckets `values` fall into under `spec` (what tunings would be with it)."""
    strategy = parse_strategy(spec)
    return len({strategy.apply(v) for v in values})


__all__ = [
    "BucketError",
    "BucketStrategy",
    "autotune",
    "bucket_count",
    "bucket_of",
    "bucket_value",
    "bucketed_values",
    "parse_strategy",
]
