"""Signatures a kernel is likely launched with, synthesized from its source (never run), to price the
demotions a static scan advises before `fix` applies them.

A runtime report records the variants a kernel compiled; a scan has none, so they are built here in
the form the report's `variant_list` uses ({"params": {name: {"kind", "type", "spec", "value"}},
"options"}), one group per constexpr configuration:

- pointers: `*fp32` unless the source says otherwise: a store of `x.to(tl.bfloat16)`, an annotation,
  a `torch.empty(..., dtype=torch.float16)` passed at a launch of the same file; a pointer whose loaded
  values go into another access's address (an index table) is `*i32` (`*i64` when the values are cast
  to int64), as is one whose loaded values go into bit operations (packed integers) or that an atomic
  writes int literals to (a lock); failing all that, a name of indices (`ids`, `starts`, `lengths`)
  `*i32`, of positions `*i64`, of a mask `*i1`; always 16-byte aligned. The pricer retypes the pointers
  the source says nothing of (`Synthesized.retyped`, `RETRY_ELEMENTS`) when a signature does not compile;
- ints: `i32` (`i64` when annotated `tl.int64`), every int divisible by 16 in the base signature, and
  for each int one signature with it `== 1` and one with it odd (the classes a demotion merges);
- constexprs: each `triton.Config` of an autotune (its launch options too), else the default, else a
  literal passed at a launch; a heuristic is computed from the constexprs it reads (`args["BLOCK"] * 2`)
  where it can be, and one that compares run-time values, or a constexpr read only as a condition,
  takes both True and False. A constexpr given no value (one passed `q.shape[1]` at a launch) is valued
  from its use: both bools for a condition, the strings it is compared with, `ASSUMED_DTYPE` for a
  dtype, `ASSUMED_BLOCK` for one that shapes blocks (`tl.arange(0, BLOCK)`), `ASSUMED_COUNT` for a
  count or multiplier (`off_z * N_H`); each is said in the price;
- floats, bools and `None` defaults as themselves.

Autotune configs built by code are read where the source gives them as literals (`config_lists`);
when they cannot be, the constexprs they set are valued from their use and `configs_unread` says so. A
heuristic over run-time values of no known form, or a tuple parameter, makes the kernel unpriceable:
`reason` says why.

    >>> from jitguard.codemod.kernels import find_kernels
    >>> src = b"import triton\\n@triton.jit\\ndef k(x_ptr, n, B: tl.constexpr = 64):\\n    pass\\n"
    >>> (kernel,) = find_kernels(src)
    >>> synthesized = synthesize(kernel)
    >>> len(synthesized.groups), len(synthesized.groups[0])
    (1, 3)
    >>> synthesized.groups[0][0]["params"]["n"], synthesized.groups[0][0]["params"]["B"]["value"]
    ({'kind': 'int', 'type': 'i32', 'spec': 'div16', 'value': None}, 64)
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from jitguard.codemod.config_lists import Config, ModuleScope, resolve_factory_configs
from jitguard.codemod.kernels import (
    KernelParam,
    TritonKernel,
    autotune_calls,
    configs_argument,
    dotted_name,
    parameter_defaults,
)
from jitguard.codemod.launch_sites import LaunchFacts
from jitguard.codemod.param_uses import leftmost
from jitguard.events import CONFIG_OPTIONS

# At most this many constexpr configurations are priced per kernel (each costs a few compiles).
MAX_GROUPS = 6
DEFAULT_POINTER = "*fp32"
# The element types tried in turn for the pointers the source gives no dtype when a signature does not compile.
RETRY_ELEMENTS = ("fp16", "bf16", "fp32")
# `tl.<name>` / `torch.<name>` -> Triton's element type name.
ELEMENT_TYPES = {
    "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32", "float64": "fp64",
    "float8e4nv": "fp8e4nv", "float8_e4m3fn": "fp8e4nv", "float8e5": "fp8e5", "float8_e5m2": "fp8e5",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "int1": "i1", "bool": "i1",
}
_TENSOR_FACTORIES = frozenset({"empty", "zeros", "ones", "full", "randn", "rand", "empty_like", "zeros_like",
                               "randint", "arange", "tensor"})


@dataclass
class Synthesized:
    """Signature groups for one kernel (one group per constexpr configuration), or why there are none."""

    groups: list[list[dict[str, Any]]] = field(default_factory=list)
    reason: str | None = None
    configs_total: int = 0  # constexpr configurations found (groups holds at most MAX_GROUPS of them)
    assumed: list[str] = field(default_factory=list)  # pointers whose dtype the source did not say
    # constexprs no default or launch gives, valued from their use ("BLOCK=128", "HAS_BIAS=True/False")
    assumed_constexprs: list[str] = field(default_factory=list)
    configs_unread: bool = False  # an autotune's configs could not be read from the source

    def retyped(self, element: str) -> Synthesized:
        """The same signatures with every pointer whose dtype the source did not say pointing to `element`
        ("fp16"): the next guess when a signature does not compile (`tl.dot` of fp16 and fp32 operands)."""
        pointer = "*" + element
        groups = [[{"params": {name: dict(entry, type=pointer) if name in self.assumed else entry
                               for name, entry in variant["params"].items()}, "options": variant["options"]}
                   for variant in group] for group in self.groups]
        return replace(self, groups=groups)

    def assumed_types(self) -> dict[str, list[str]]:
        """Element type -> the `assumed` pointers given it ({"fp16": ["K", "Q"], "fp32": ["TAUS"]})."""
        found: dict[str, list[str]] = {}
        params = self.groups[0][0]["params"] if self.groups else {}
        for name in self.assumed:
            found.setdefault(str(params.get(name, {}).get("type") or DEFAULT_POINTER).lstrip("*"), []).append(name)
        return found


def _element_type(expression: ast.AST | None) -> str | None:
    """`tl.bfloat16` / `torch.float16` / `"fp16"` -> "bf16" / "fp16"."""
    name = dotted_name(expression) if isinstance(expression, ast.expr) else None
    if not name:
        return None
    last = name.rsplit(".", 1)[-1]
    return ELEMENT_TYPES.get(last) or (last if last in ELEMENT_TYPES.values() else None)


def _cast_type(expression: ast.expr) -> str | None:
    """The type of `x.to(tl.float16)` / `tl.cast(x, tl.float16)`, else None."""
    if isinstance(expression, ast.Call):
        func = expression.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if last == "to" and expression.args:
            return _element_type(expression.args[0])
        if last == "cast" and len(expression.args) > 1:
            return _element_type(expression.args[1])
    return None


def _pointer_types_from_body(kernel: TritonKernel, pointers: set[str]) -> dict[str, str]:
    """Pointer -> element type, from stores of cast values and loads whose values address other loads."""
    found: dict[str, str] = {}
    loaded_into: dict[str, str] = {}  # local -> the pointer it was loaded from
    bases = _pointer_locals(kernel, pointers)  # `row_ptrs = x_ptr + ...` -> x_ptr
    for node in kernel.nodes():
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value, cast = node.value, None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
                cast, value = _cast_type(value), value.func.value
            source = _loaded_pointer(value)
            source = bases.get(source, source) if source is not None else None
            if source is not None and source in pointers:
                loaded_into[node.targets[0].id] = source
                if cast in ("i64", "i32"):
                    found.setdefault(source, "*i64" if cast == "i64" else "*i32")
        elif isinstance(node, ast.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] == "store" and len(
                node.args) > 1:
            target = leftmost(node.args[0])
            stored = _cast_type(node.args[1])
            name = bases.get(target.id, target.id) if isinstance(target, ast.Name) else None
            if name is not None and name in pointers and stored:
                found.setdefault(name, "*" + stored)
    # values of a pointer that go into another access's address (directly or through locals): an index table
    for name, pointer_type in _integer_pointers(kernel, loaded_into, bases).items():
        if name in pointers:
            found.setdefault(name, pointer_type)
    for name in _address_names(kernel):
        if name in loaded_into:
            found.setdefault(loaded_into[name], "*i32")
    for name in pointers - found.keys():
        by_name = _pointer_type_by_name(name)
        if by_name is not None:
            found[name] = by_name
    return found


# The element type given a pointer with no dtype in the source whose loaded values are `tl.dot` operands:
# half precision, as the matrix products of LLM serving take them (an fp32 guess is a different kernel).
DOT_OPERAND_POINTER = "*fp16"


def _dot_operand_pointers(kernel: TritonKernel, pointers: set[str]) -> set[str]:
    """Pointers whose loaded values (through a local, a cast or a transpose) are operands of `tl.dot`."""
    bases = _pointer_locals(kernel, pointers)
    loaded: dict[str, str] = {}
    operands: set[str] = set()
    for node in kernel.nodes():
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
                value = value.func.value
            source = _loaded_pointer(value)
            if source is not None and bases.get(source, source) in pointers:
                loaded[node.targets[0].id] = bases.get(source, source)
        elif isinstance(node, ast.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] == "dot":
            operands.update(n.id for arg in node.args[:2] for n in ast.walk(arg) if isinstance(n, ast.Name))
            operands.update(p for arg in node.args[:2] for p in [_loaded_pointer(arg)] if p is not None)
    return {loaded.get(name, bases.get(name, name)) for name in operands} & pointers


_BIT_OPERATORS = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_ATOMICS = frozenset({"atomic_cas", "atomic_xchg", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                      "atomic_or", "atomic_xor"})


def _integer_pointers(kernel: TritonKernel, loaded_into: dict[str, str], bases: dict[str, str]) -> dict[str, str]:
    """Pointers the body shows hold integers (`*i32`): loaded values used in bit operations (`w >> 4`,
    `w & 0xF`: packed integers; Triton rejects them on floats), and pointers an atomic writes int literals
    to (`tl.atomic_cas(lock, 0, 1)`: a lock or counter; a compare-and-swap on floats does not compile);
    `*i64` for a table of addresses (loaded values cast `.to(tl.pointer_type(...))`)."""
    found: dict[str, str] = {}
    for node in kernel.nodes():
        if _is_address_cast(node):  # `tl.load(table + i).to(tl.pointer_type(...))`: a table of addresses
            assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            table = _loaded_pointer(node.func.value)
            if table is not None:
                found.setdefault(bases.get(table, table), "*i64")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _BIT_OPERATORS):
            for operand in (node.left, node.right):
                if isinstance(operand, ast.Name) and operand.id in loaded_into:
                    found.setdefault(loaded_into[operand.id], "*i32")
        elif isinstance(node, ast.Call) and len(node.args) > 1 and (
                callee := (dotted_name(node.func) or "").rsplit(".", 1)[-1]) in _ATOMICS:
            target = leftmost(node.args[0])
            values = node.args[1:3 if callee == "atomic_cas" else 2]
            if isinstance(target, ast.Name) and values and all(
                    isinstance(v, ast.Constant) and type(v.value) is int for v in values):
                found.setdefault(bases.get(target.id, target.id), "*i32")
    return found


def _is_address_cast(node: ast.AST) -> bool:
    """True for `<value>.to(tl.pointer_type(...))`: a loaded integer used as an address."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"
            and bool(node.args) and isinstance(node.args[0], ast.Call)
            and (dotted_name(node.args[0].func) or "").rsplit(".", 1)[-1] == "pointer_type")


def _pointer_locals(kernel: TritonKernel, pointers: set[str]) -> dict[str, str]:
    """Locals built from a pointer parameter (`rows = x_ptr + i * n`, a few steps) -> that parameter."""
    firsts: dict[str, str] = {}
    for node in kernel.nodes():
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            base = leftmost(node.value)
            if isinstance(base, ast.Name):
                firsts.setdefault(node.targets[0].id, base.id)
    found = {}
    for local in firsts:
        name = local
        for _ in range(6):
            name = firsts.get(name, name)
            if name in pointers:
                found[local] = name
                break
    return found


def _address_names(kernel: TritonKernel) -> set[str]:
    """Names an access's address is built from, through the locals it is assigned from (a few steps)."""
    assigned: dict[str, list[ast.expr]] = {}
    addresses: list[ast.expr] = []
    for node in kernel.nodes():
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assigned.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in (
                "load", "store") and node.args:
            addresses.append(node.args[0])
    names: set[str] = set()
    todo: list[ast.expr] = addresses
    for _ in range(6):
        following: list[ast.expr] = []
        for expression in todo:
            for name in ast.walk(expression):
                if isinstance(name, ast.Name) and name.id not in names:
                    names.add(name.id)
                    following += assigned.get(name.id, [])
        todo = following
    return names


# Words of a pointer's name that say what it holds, when nothing else in the source does.
_INDEX_WORDS = frozenset({"idx", "ids", "indices", "index", "offsets", "starts", "ends", "lengths", "lens", "loc",
                          "locs", "table", "map", "mapping", "counts", "slots", "slot"})


def _pointer_type_by_name(name: str) -> str | None:
    words = set(name.lower().replace("ptr", "").split("_"))
    if words & {"positions", "pos"}:
        return "*i64"
    if words & _INDEX_WORDS:
        return "*i32"
    if words & {"mask", "masks"}:
        return "*i1"
    return None


def _loaded_pointer(value: ast.expr) -> str | None:
    if isinstance(value, ast.Call) and (dotted_name(value.func) or "").rsplit(".", 1)[-1] == "load" and value.args:
        base = leftmost(value.args[0])
        return base.id if isinstance(base, ast.Name) else None
    return None


def _pointer_type_from_launch(values: list[ast.expr]) -> str | None:
    """`torch.empty(..., dtype=torch.float16)` (or `x.to(torch.bfloat16)`) passed at a launch."""
    for value in values:
        if not isinstance(value, ast.Call):
            continue
        last = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
        if last in _TENSOR_FACTORIES:
            dtype = next((k.value for k in value.keywords if k.arg == "dtype"), None)
            if _element_type(dtype):
                return "*" + str(_element_type(dtype))
        elif last == "to" and value.args and _element_type(value.args[0]):
            return "*" + str(_element_type(value.args[0]))
    return None


def _literal(expression: ast.expr | None) -> tuple[bool, Any]:
    """(True, value) for a constant the log format holds (a Triton dtype as `triton.language.<name>`)."""
    if isinstance(expression, ast.Constant) and isinstance(expression.value, (int, float, str, bool, type(None))):
        return True, expression.value
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.USub):
        found, value = _literal(expression.operand)
        return (found, -value) if found and isinstance(value, (int, float)) and not isinstance(value, bool) else (
            False, None)
    name = dotted_name(expression) if isinstance(expression, ast.Attribute) else None
    if name and name.split(".")[0] in ("tl", "triton", "gl") and _element_type(expression):
        return True, "triton.language." + name.rsplit(".", 1)[-1]
    return False, None


def _autotune_configs(kernel: TritonKernel, scope: ModuleScope | None) -> list[Config] | None:
    """(constexprs, launch options) of each `triton.Config` of the kernel's autotune: a literal list, else
    one built by code the source gives (`config_lists`: a factory function, a comprehension); or None."""
    calls = autotune_calls(kernel)
    if not calls:
        # a decorator made by a function of this file or package (`@tuned()` returning `triton.autotune(...)`)
        factories = [d for d in (kernel.node.decorator_list if kernel.node else []) if isinstance(d, ast.Call)]
        resolved = [resolve_factory_configs(d, scope) for d in factories] if scope is not None else []
        return next((configs for configs in resolved if configs), None)
    configs = configs_argument(calls[0])
    if not isinstance(configs, (ast.List, ast.Tuple)) or not all(
            isinstance(c, ast.Call) and c.args and isinstance(c.args[0], ast.Dict) for c in configs.elts):
        return resolve_factory_configs(calls[0], scope) if scope is not None else None
    found = []
    for config in configs.elts:
        if not (isinstance(config, ast.Call) and config.args and isinstance(config.args[0], ast.Dict)):
            return None  # a config built in a loop or a helper: not read statically
        values: dict[str, Any] = {}
        for key, value in zip(config.args[0].keys, config.args[0].values):
            ok, literal = _literal(value)
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and ok):
                return None
            values[key.value] = literal
        options = {k.arg: _literal(k.value)[1] for k in config.keywords
                   if k.arg in CONFIG_OPTIONS and _literal(k.value)[0]}
        found.append((values, options))
    return found


def _constexpr_choices(kernel: TritonKernel, param: KernelParam, defaults: dict[str, ast.expr],
                       launches: LaunchFacts) -> list[Any] | None:
    """Values of a constexpr not set by an autotune config: its default, literals passed at launches, both
    bools for a comparison heuristic; None when none is known."""
    values = []
    for expression in [defaults.get(param.name), *launches.passed.get(param.name, [])]:
        ok, value = _literal(expression)
        if ok and value not in values:
            values.append(value)
    return values or None


# The block size taken for a constexpr that only shapes blocks (`tl.arange(0, BLOCK)`) when no value is given.
ASSUMED_BLOCK = 64
# The value taken for a constexpr used as a count, a multiplier or a bound (`off_z * N_H + off_h`, `range(N)`)
# when no value is given: a power of two, so it keeps every block use valid and is in the multiple-of-16 class.
ASSUMED_COUNT = 16
# The element type taken for a constexpr used as a dtype (`x.to(OUT_DTYPE)`, `tl.zeros(..., dtype=ACC)`).
ASSUMED_DTYPE = "triton.language.float16"
_SHAPING_CALLS = frozenset({"arange", "zeros", "full", "reshape", "broadcast_to", "view"})


def _choices_from_use(kernel: TritonKernel, name: str) -> list[Any]:
    """Values for a constexpr no default or launch gives, from how the body reads it: both bools for one
    read only as a condition; the strings or dtypes it is compared with (`MODE == "fp8"`, `X == tl.float16`);
    `ASSUMED_DTYPE` for one used as a dtype; `ASSUMED_BLOCK` for one that shapes blocks; `ASSUMED_COUNT` for
    any other read (arithmetic, a bound, a comparison) or none (then no value changes the code)."""
    from jitguard.codemod.scan import used_only_as_condition

    if used_only_as_condition(kernel, name):
        return [True, False]
    parents = {id(child): node for node in kernel.nodes() for child in ast.iter_child_nodes(node)}
    reads = [node for node in kernel.nodes()
             if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)]
    compared = _compared_strings(reads, parents)
    if compared:
        return compared
    roles = {_read_role(node, parents) for node in reads}
    if "dtype" in roles:
        return [ASSUMED_DTYPE]
    return [ASSUMED_BLOCK] if "shape" in roles else [ASSUMED_COUNT]


def _compared_strings(reads: list[ast.Name], parents: dict[int, ast.AST]) -> list[str]:
    """The strings and dtypes `reads` are compared with (`X == "a"`, `X in ("a", "b")`, `X == tl.float16`),
    in source order."""
    found: list[str] = []
    for node in reads:
        parent = parents.get(id(node))
        if not isinstance(parent, ast.Compare):
            continue
        for operand in (parent.left, *parent.comparators):
            items = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
            found += [value for ok, value in map(_literal, items) if ok and isinstance(value, str)]
    return list(dict.fromkeys(found))


def _read_role(node: ast.AST, parents: dict[int, ast.AST]) -> str:
    """"dtype" for a read passed as a dtype, "shape" for one that shapes a block, else "value"."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.keyword) and parent.arg in ("dtype", "out_dtype"):
        return "dtype"
    while isinstance(parent, (ast.Tuple, ast.List)):
        parent = parents.get(id(parent))
    if isinstance(parent, ast.Call):
        func = parent.func
        callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        dtype_argument = {"to": 0, "cast": 1}.get(callee)
        if dtype_argument is not None and len(parent.args) > dtype_argument and parent.args[dtype_argument] is node:
            return "dtype"
        if callee in _SHAPING_CALLS:
            return "shape"
    return "value"


def _runtime_entry(param: KernelParam, kernel: TritonKernel, facts: dict[str, Any]) -> dict[str, Any] | str:
    """The base-signature entry of a runtime parameter, or why it cannot be synthesized."""
    name = param.name
    default = facts["defaults"].get(name)
    if isinstance(default, ast.Constant) and default.value is None:
        return {"kind": "none", "type": None, "spec": None, "value": None}
    if name in facts["floats"]:
        return {"kind": "float", "type": "fp32", "spec": None, "value": None}
    if name in facts["flags"]:
        return {"kind": "bool", "type": "i1", "spec": None, "value": None}
    if name in facts["pointers"]:
        pointer = (facts["body_types"].get(name) or _pointer_type_from_launch(facts["launches"].passed.get(name, []))
                   or _annotated_pointer(param))
        if pointer is None:
            facts["assumed"].append(name)
            pointer = DOT_OPERAND_POINTER if name in facts["dot_operands"] else DEFAULT_POINTER
        return {"kind": "ptr", "type": pointer, "spec": "aligned16", "value": None}
    annotation = (param.annotation or "").rsplit(".", 1)[-1]
    if annotation in ("tuple", "Tuple"):
        return f"parameter `{name}` is a tuple"
    int_type = "i64" if annotation == "int64" else "i32"
    return {"kind": "int", "type": int_type, "spec": "div16", "value": None}


def _annotated_pointer(param: KernelParam) -> str | None:
    annotation = param.annotation or ""
    if "pointer" not in annotation:
        return None
    element = ELEMENT_TYPES.get(annotation.rsplit(".", 1)[-1].strip(")"))
    return "*" + element if element else None


def _int_classes(base: dict[str, Any]) -> list[dict[str, Any]]:
    """The base signature, then for each int one signature with it `== 1` (i32 only) and one odd."""
    variants = [base]
    for name, entry in base["params"].items():
        if entry["kind"] != "int":
            continue
        for spec in (("one", "plain") if entry["type"] == "i32" else ("plain",)):
            params = dict(base["params"], **{name: dict(entry, spec=spec)})
            variants.append({"params": params, "options": base["options"]})
    return variants


def _constexpr_entry(value: Any) -> dict[str, Any]:
    if value is None:
        return {"kind": "none", "type": None, "spec": None, "value": None}
    return {"kind": "constexpr", "type": None, "spec": None, "value": value}


def _configurations(kernel: TritonKernel, facts: dict[str, Any]) -> tuple[list[tuple[dict, dict]], int] | str:
    """(constexpr values, launch options) of each configuration to price (at most MAX_GROUPS), and how many
    there are; or why none can be built."""
    configs = _autotune_configs(kernel, facts["scope"])
    if configs is None and autotune_calls(kernel):
        facts["configs_unread"] = True  # its constexprs are valued from their use below, and the price says so
    configs = configs or [({}, {})]
    heuristics = {h.name: h for h in kernel.heuristics}
    free: list[tuple[str, list[Any]]] = []
    for param in kernel.params:
        if param.name in heuristics:
            continue  # computed per configuration below, from the values it reads
        if param.is_constexpr and not all(param.name in values for values, _ in configs):
            choices = _constexpr_choices(kernel, param, facts["defaults"], facts["launches"])
            if choices is None:
                choices = _choices_from_use(kernel, param.name)
                facts["assumed_constexprs"].append(_assumed_words(param.name, choices, facts["launches"]))
            free.append((param.name, choices))
    total = len(configs)
    for _, choices in free:
        total *= len(choices)
    found = []
    for config, *picked in itertools.product(configs, *(choices for _, choices in free)):
        values, options = config
        combos: list[dict[str, Any]] | str = [{**dict(zip((name for name, _ in free), picked)), **values}]
        for heuristic in kernel.heuristics:
            combos = _with_heuristic(kernel, heuristic, combos) if isinstance(combos, list) else combos
        if isinstance(combos, str):
            return combos
        found += [(combo, options) for combo in combos]
    total = max(total, len(found))
    return found[:MAX_GROUPS], total


def _assumed_words(name: str, choices: list[Any], launches: LaunchFacts) -> str:
    """`N_H=16 (`q.shape[1]` at a launch)`: the values assumed for a constexpr, and what a launch passes."""
    words = f"{name}={'/'.join(str(c).removeprefix('triton.language.') for c in choices)}"
    passed = [ast.unparse(e) for e in launches.passed.get(name, []) if not _literal(e)[0]]
    return words + (f" (`{passed[0][:40]}` at a launch)" if passed else "")


def _with_heuristic(kernel: TritonKernel, heuristic: Any, combos: list[dict[str, Any]]) -> list[dict[str, Any]] | str:
    """Each configuration with the heuristic's value computed from the constexprs it reads; one it cannot
    compute takes every value its form allows (a comparison, or a flag read only as a condition: both
    bools; `A if C else B` of literals: A and B); or why it cannot be priced."""
    from jitguard.codemod.scan import used_only_as_condition

    expression = heuristic.expression
    body = expression.body if isinstance(expression, ast.Lambda) else expression
    argument = expression.args.args[0].arg if isinstance(expression, ast.Lambda) and expression.args.args else ""
    found = []
    for combo in combos:
        value = evaluate(body, combo, argument)
        if value is not _UNKNOWN:
            found.append({**combo, heuristic.name: value})
            continue
        if isinstance(body, (ast.Compare, ast.BoolOp)) or used_only_as_condition(kernel, heuristic.name):
            choices: list[Any] = [True, False]
        elif isinstance(body, ast.IfExp) and _literal(body.body)[0] and _literal(body.orelse)[0]:
            choices = list(dict.fromkeys([_literal(body.body)[1], _literal(body.orelse)[1]]))
        else:
            return f"heuristic `{heuristic.name}` reads run-time values the source does not give"
        found += [{**combo, heuristic.name: choice} for choice in choices]
    return found


_UNKNOWN = object()
_OPERATORS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.Div: lambda a, b: a / b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b, ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b, ast.Pow: lambda a, b: a ** b if abs(b) <= 64 else _UNKNOWN,
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
}
_FUNCTIONS: dict[str, Any] = {
    "min": min, "max": max, "abs": abs, "int": int, "bool": bool,
    "next_power_of_2": lambda n: 1 << (int(n) - 1).bit_length() if n > 0 else 1,
    "cdiv": lambda a, b: -(-a // b),
}


def evaluate(node: ast.AST, values: dict[str, Any], argument: str) -> Any:
    """The value of a heuristic's expression over known constexpr `values` (`args["BLOCK"] * 2`, `8`,
    `min(args["N"], 64)`), computed by walking the syntax tree, never run; `_UNKNOWN` when it reads a value
    not known here or does anything but arithmetic on numbers."""
    try:
        return _evaluate(node, values, argument)
    except (ArithmeticError, TypeError, ValueError):
        return _UNKNOWN


def _evaluate(node: ast.AST, values: dict[str, Any], argument: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == argument:
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        return values.get(key, _UNKNOWN) if isinstance(key, str) else _UNKNOWN
    parts: list[Any]
    if isinstance(node, ast.BinOp):
        parts = [_evaluate(node.left, values, argument), _evaluate(node.right, values, argument)]
        operator = _OPERATORS.get(type(node.op))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        parts = [_evaluate(node.left, values, argument), _evaluate(node.comparators[0], values, argument)]
        operator = _OPERATORS.get(type(node.ops[0]))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        parts = [_evaluate(node.operand, values, argument)]
        operator = (lambda a: -a) if isinstance(node.op, ast.USub) else (lambda a: not a)
    elif isinstance(node, ast.BoolOp):
        parts = [_evaluate(value, values, argument) for value in node.values]
        operator = (lambda *a: all(a)) if isinstance(node.op, ast.And) else (lambda *a: any(a))
    elif isinstance(node, ast.IfExp):
        test = _evaluate(node.test, values, argument)
        return _UNKNOWN if test is _UNKNOWN else _evaluate(node.body if test else node.orelse, values, argument)
    elif isinstance(node, ast.Call) and not node.keywords:
        name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        parts = [_evaluate(arg, values, argument) for arg in node.args]
        operator = _FUNCTIONS.get(name)
    else:
        return _UNKNOWN
    if operator is None or any(part is _UNKNOWN or not isinstance(part, (int, float, bool)) for part in parts):
        return _UNKNOWN
    return operator(*parts)


def synthesize(kernel: TritonKernel, launches: LaunchFacts | None = None,
               kinds: dict[str, str] | None = None, scope: ModuleScope | None = None) -> Synthesized:
    """Signature groups for `kernel` (see the module docstring). `launches`: what this file's launches pass
    it; `kinds`: each runtime parameter's kind as `scan.runtime_kinds` judges it ("ptr", "float", "flag",
    "int"), computed here when not given; `scope`: the kernel's module, to read autotune configs built by
    code (a factory function of the same file or package)."""
    if kernel.node is None:
        return Synthesized(reason="its source is not available")
    launches = launches or LaunchFacts()
    if kinds is None:
        from jitguard.codemod.scan import runtime_kinds

        kinds = runtime_kinds(kernel, launches=launches)
    pointers = {name for name, kind in kinds.items() if kind == "ptr"}
    facts: dict[str, Any] = {
        "defaults": parameter_defaults(kernel), "launches": launches, "pointers": pointers, "assumed": [],
        "assumed_constexprs": [], "scope": scope, "configs_unread": False,
        "floats": {n for n, k in kinds.items() if k == "float"}, "flags": {n for n, k in kinds.items() if k == "flag"},
        "body_types": _pointer_types_from_body(kernel, pointers),
        "dot_operands": _dot_operand_pointers(kernel, pointers),
    }
    runtime: dict[str, dict[str, Any]] = {}
    for param in kernel.params:
        if not param.is_constexpr:
            entry = _runtime_entry(param, kernel, facts)
            if isinstance(entry, str):
                return Synthesized(reason=entry)
            runtime[param.name] = entry
    configurations = _configurations(kernel, facts)
    if isinstance(configurations, str):
        return Synthesized(reason=configurations)
    found, total = configurations
    groups = []
    for values, options in found:
        params = {p.name: runtime[p.name] if p.name in runtime else _constexpr_entry(values.get(p.name))
                  for p in kernel.params}
        groups.append(_int_classes({"params": params, "options": dict(options)}))
    return Synthesized(groups, None, total, sorted(set(facts["assumed"])), facts["assumed_constexprs"],
                       configs_unread=facts["configs_unread"])
