"""A Triton autotuner switched, in place, to one chosen config per bucket of its key values.

Facts relied on, identical in Triton 3.2 .. 3.9: `Autotuner.run` builds its tuning key as
`tuple([_args[k] for k in self.keys if k in _args] + [str(a.dtype) for tensor args])` and looks it
up in `self.cache` ({key: Config}). Only that lookup is bucketed; the kernel still receives the true
values. Importing this module imports Triton (through `jitguard.triton_compat`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jitguard import triton_compat


class _BucketedConfigs(dict):
    """The tuner's {tuning key: Config} dict, storing and finding configs per bucket of the key.

    A real dict holding bucketed keys, so code that copies, clears or refills it with dict methods
    (jitguard's no_recompiles isolation, Triton's own code) works on it unchanged.
    """

    def __init__(self, entries: Any, tuner: Any) -> None:
        super().__init__(entries)
        self.tuner = tuner

    def _bucket(self, key: Any) -> Any:
        state = self.tuner.__dict__
        last = state.get("_jitguard_last_key")
        if last is not None and last[0] is key:  # Triton looks the same key tuple up twice per launch
            return last[1]
        slots = state.get("_jitguard_key_slots")
        if not slots or type(key) is not tuple:
            return key
        bucketed = list(key)
        for position, rule in slots:
            if position < len(bucketed):
                bucketed[position] = rule(bucketed[position])
        result = tuple(bucketed)
        state["_jitguard_last_key"] = (key, result)
        return result

    def __contains__(self, key: Any) -> bool:
        return dict.__contains__(self, self._bucket(key))

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self, self._bucket(key))

    def __setitem__(self, key: Any, config: Any) -> None:
        dict.__setitem__(self, self._bucket(key), config)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, self._bucket(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self, self._bucket(key), default)


class _BucketedConfigSlot:
    """`cache` on a bucketing tuner: the slot Triton (or the offline backend) keeps, holding a
    `_BucketedConfigs`; a plain dict found there (a fresh offline context) is converted once.

    `owners`: the tuner's classes from its own up to Triton's Autotuner, the only places a `cache`
    descriptor can sit (the offline backend installs one on Autotuner); looked up on every launch.
    """

    def __init__(self, owners: tuple) -> None:
        self.owners = owners

    def _below(self) -> Any:
        for klass in self.owners:
            attribute = klass.__dict__.get("cache")  # not getattr: a miss would raise and catch
            if attribute is not None:
                return attribute if hasattr(type(attribute), "__set__") else None
        return None

    def __get__(self, tuner: Any, owner: Any = None) -> Any:
        if tuner is None:
            return self
        below = self._below()
        storage = below.__get__(tuner, owner) if below is not None else tuner.__dict__.setdefault("cache", {})
        if type(storage) is not _BucketedConfigs:
            storage = _BucketedConfigs(storage, tuner)
            self.__set__(tuner, storage)
        return storage

    def __set__(self, tuner: Any, value: Any) -> None:
        if type(value) is not _BucketedConfigs:
            value = _BucketedConfigs(value or {}, tuner)
        below = self._below()
        if below is not None:
            below.__set__(tuner, value)
        else:
            tuner.__dict__["cache"] = value


def _bucketing_class(cls: type) -> type:
    """A subclass of `cls` (no new fields: instances switch to it in place) that buckets tuning keys."""

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Put the call's bucketed key positions on the tuner before Triton's `run` builds its key.
        state = self.__dict__
        if len(args) > state["_jitguard_last_key_index"]:  # every key positional: the common case
            state["_jitguard_key_slots"] = state["_jitguard_all_slots"]
        else:
            given = set(state["_jitguard_arg_names"][:len(args)]) | set(kwargs)
            present = [k for k in self.keys if k in given]
            rules = state["_jitguard_rules"]
            state["_jitguard_key_slots"] = [(i, rules[k]) for i, k in enumerate(present) if k in rules]
        return super(sub, self).run(*args, **kwargs)

    mro = cls.__mro__
    owners = mro[:mro.index(triton_compat.autotuner_type()) + 1]
    namespace = {"__module__": __name__, "cache": _BucketedConfigSlot(owners), "run": run, "_jitguard_bucketing": True}
    sub: type[Any] = type(f"Bucketed{cls.__name__}", (cls,), namespace)
    return sub


_bucketing_classes: dict[type, type] = {}


def bucket_autotuner_keys(tuner: Any, rules: dict[str, Callable[[Any], Any]]) -> None:
    """Make `tuner` (a Triton Autotuner) keep one chosen config per bucket of its key values.

    `rules[name](value)` maps a value of key parameter `name` to its bucket. The tuner stays an
    instance of its class (a subclass with no new fields is swapped in), and the kernel still
    receives the true values: only the lookup in its config cache is bucketed.
    """
    cls = type(tuner)
    if cls.__dict__.get("_jitguard_bucketing"):
        cls = cls.__mro__[1]
    sub = _bucketing_classes.get(cls)
    if sub is None:
        sub = _bucketing_classes[cls] = _bucketing_class(cls)
    arg_names = triton_compat.autotuner_arg_names(tuner)
    keys = triton_compat.autotuner_key_names(tuner)
    state = tuner.__dict__
    state["_jitguard_arg_names"] = arg_names
    state["_jitguard_rules"] = dict(rules)
    state["_jitguard_all_slots"] = [(i, rules[k]) for i, k in enumerate(keys) if k in rules]
    indices = [arg_names.index(k) for k in keys if k in arg_names]
    # A key name that is no argument drops out of Triton's key: take the slow path to stay in step.
    state["_jitguard_last_key_index"] = max(indices) if len(indices) == len(keys) and indices else len(arg_names) + 1
    tuner.__class__ = sub
