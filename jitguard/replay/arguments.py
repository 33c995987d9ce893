"""Arguments of a recorded variant's classes: an int of its divisibility class, a tensor of its dtype
and alignment, the constexpr itself. Pure at import; torch is imported only to build a tensor.

Representative values: int `one` -> 1, `div16` -> 16, `plain` (and `off`, not specialized) -> 17;
i64 -> 2**31 + 16 / 2**31 + 17; u64 -> 2**63 + 16 / 2**63 + 17.
"""

from __future__ import annotations

from typing import Any

from jitguard.events import CONSTEXPR_TAGS, LEGACY_DTYPE_PREFIX, constexpr_words

# Triton pointer element types -> torch dtype names.
TORCH_DTYPE_NAMES = {
    "fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "i1": "bool", "u1": "bool",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz",
}

INT_VALUES: dict[tuple[str, Any], int] = {
    ("i32", "one"): 1, ("i32", "div16"): 16, ("i32", "plain"): 17, ("i32", "off"): 17, ("i32", "noalign"): 17,
    ("i64", "div16"): 2**31 + 16, ("i64", "plain"): 2**31 + 17, ("i64", "off"): 2**31 + 17,
    ("i64", "noalign"): 2**31 + 17,
    ("u64", "div16"): 2**63 + 16, ("u64", "plain"): 2**63 + 17, ("u64", "off"): 2**63 + 17,
    ("u64", "noalign"): 2**63 + 17,
}



def constexpr_value(name: str, recorded: Any) -> Any:
    """The constexpr a recorded value stands for (`jitguard.events.CONSTEXPR_TAGS`): a Triton dtype
    from {"dtype": name} or a log's older "triton.language.<name>", a tuple element-wise, a
    non-finite float; plain JSON values as themselves. ValueError naming `name` when the record
    holds only a repr."""
    if isinstance(recorded, dict):
        if len(recorded) != 1 or next(iter(recorded)) not in CONSTEXPR_TAGS:
            raise ValueError(f"constexpr {name!r}: unreadable recorded value {recorded!r:.80}")
        (tag, inner), = recorded.items()
        if tag == "dtype":
            return _triton_dtype(name, inner)
        if tag == "tuple" and isinstance(inner, list):
            return tuple(constexpr_value(name, item) for item in inner)
        if tag == "float" and inner in ("inf", "-inf", "nan"):
            return float(inner)
        raise ValueError(f"constexpr {name!r} was recorded as {str(inner)[:80]!r}, which cannot be rebuilt")
    if isinstance(recorded, str) and recorded.startswith(LEGACY_DTYPE_PREFIX):
        attribute = recorded[len(LEGACY_DTYPE_PREFIX):]
        import triton.language as tl
        if isinstance(getattr(tl, attribute, None), tl.dtype):
            return getattr(tl, attribute)
    return recorded


def _triton_dtype(name: str, dtype_name: Any) -> Any:
    import triton.language as tl
    try:
        return tl.dtype(dtype_name)
    except Exception:  # Triton raises its own error types for an unknown name
        raise ValueError(f"constexpr {name!r}: {dtype_name!r} is not a Triton dtype") from None


def unrebuildable_reason(params: dict[str, dict[str, Any]]) -> str | None:
    """Why a variant cannot be rebuilt from its recorded classes, or None."""
    for name, entry in params.items():
        kind, ty = entry.get("kind"), entry.get("type") or ""
        if kind == "constexpr":
            reason = _constexpr_unrebuildable(name, entry.get("value"))
            if reason:
                return reason
        if kind == "tuple":
            return f"argument {name!r} is a tuple ({ty}): its elements' classes are not recorded"
        if kind == "ptr":
            if TORCH_DTYPE_NAMES.get(ty.lstrip("*")) is None and not entry.get("dtype"):
                return f"argument {name!r}: unknown pointer dtype {ty!r}"
        elif kind == "int":
            if (int_type_of(ty), entry.get("spec")) not in INT_VALUES:
                return f"argument {name!r}: no representative value for {ty} {entry.get('spec')}"
        elif kind not in ("constexpr", "float", "bool", "none"):
            return f"argument {name!r}: unknown kind {kind!r} (type {ty!r})"
    return None


def _constexpr_unrebuildable(name: str, value: Any) -> str | None:
    """Why a recorded constexpr value cannot be rebuilt (a repr only), without importing Triton."""
    if isinstance(value, dict):
        tag, inner = next(iter(value.items())) if len(value) == 1 else ("?", value)
        if tag == "tuple" and isinstance(inner, list):
            return next((r for r in (_constexpr_unrebuildable(name, item) for item in inner) if r), None)
        if tag not in ("dtype", "float"):
            return f"constexpr {name!r} was recorded as {constexpr_words(value)[:80]!r}, which cannot be rebuilt"
    return None


def int_type_of(ty: str) -> str:
    if ty in ("i64",):
        return "i64"
    if ty in ("u64",):
        return "u64"
    return "i32"


def _torch_dtype(entry: dict[str, Any]) -> Any:
    import torch
    names = []
    element = (entry.get("type") or "").lstrip("*")
    if element in TORCH_DTYPE_NAMES:
        names.append(TORCH_DTYPE_NAMES[element])
    if entry.get("dtype"):
        names.append(entry["dtype"])
    for name in names:
        dtype = getattr(torch, name, None)
        if isinstance(dtype, torch.dtype):
            return dtype
    raise ValueError(f"unknown pointer dtype {entry.get('type')!r}")


def representative_arg(name: str, entry: dict[str, Any], device: Any, elements: int = 64) -> Any:
    """A value of parameter `name` in the class a recorded `entry` names (a tensor of `elements`
    zeros of its dtype and alignment, an int of its divisibility class, the constexpr itself): what a
    warm-up or a cost check passes to compile that variant, and a pre-tune launches with."""
    kind = entry.get("kind")
    if kind == "constexpr":
        return constexpr_value(name, entry.get("value"))
    if kind == "none":
        return None
    if kind == "bool":
        return True
    if kind == "float":
        return 1.5
    if kind == "int":
        value = INT_VALUES.get((int_type_of(entry.get("type") or ""), entry.get("spec")))
        if value is None:
            raise ValueError(f"argument {name!r}: no representative value for {entry.get('type')} {entry.get('spec')}")
        return value
    if kind == "ptr":
        import torch
        dtype = _torch_dtype(entry)
        unaligned = entry.get("spec") == "unaligned"
        buffer = torch.zeros(elements + unaligned, dtype=dtype, device=device)
        if unaligned:
            view = buffer[1:]
            if view.data_ptr() % 16 == 0:  # pragma: no cover - a 16-byte element type
                raise ValueError(f"argument {name!r}: cannot make an unaligned {dtype} pointer")
            return view
        return buffer
    raise ValueError(f"argument {name!r}: cannot rebuild kind {kind!r}")
