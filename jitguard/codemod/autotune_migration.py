"""Rewrite `@triton.autotune(configs, key=[...])` into `@jitguard.autotune(..., bucket={...})`.

An autotune keyed on a token count benchmarks every config again for each new count; the
bucketed drop-in (`jitguard.autotune`, see jitguard.tuning.bucketed_autotune) tunes once per bucket.
Only the `autotune(...)` call's bytes change: its callee becomes `jitguard.autotune` and a
`bucket=` keyword goes right after `key=` (one line or one per line, as the call is written, in
the call's quote style); a call that is `jitguard.autotune` already gets the missing names merged
into its `bucket`. `import jitguard` is added after the last top-level import when missing.

    >>> import libcst as cst
    >>> call = cst.parse_expression('triton.autotune(configs=C, key=["n", "d"])')
    >>> cst.Module([]).code_for_node(migrate_autotune(call, {"n": "pow2"}, '"'))
    'jitguard.autotune(configs=C, key=["n", "d"], bucket={"n": "pow2"})'
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

import libcst as cst

from jitguard.codemod.kernels import TritonKernel
from jitguard.codemod.sequence_edits import append_args, append_elements
from jitguard.tuning.bucketed_autotune import BucketError, parse_strategy

#: A bucket request travels through `fix`'s plan as option `bucket:STRATEGY` (e.g. `bucket:pow2`).
BUCKET_PREFIX = "bucket:"


class MigrationError(Exception):
    """A bucket request that cannot be written; the message says why."""


def is_bucket_option(option: str) -> bool:
    """True for a plan option that asks for a bucketed autotune, not a demotion."""
    return option.startswith(BUCKET_PREFIX)


def plan_buckets(
    kernel: TritonKernel, requests: Sequence[tuple[str, str]]
) -> tuple[dict[str, str], list[str], list[str]]:
    """({param: strategy} to add, params bucketed already, errors) for one kernel's bucket requests."""
    where = f"kernel `{kernel.name}` (line {kernel.line})"
    added: dict[str, str] = {}
    already: list[str] = []
    errors: list[str] = []
    if kernel.autotune_span is None:
        return {}, [], [f"{where} has no autotune(...) around it: --bucket migrates an autotune decorator"]
    keys = {key.name: key for key in kernel.autotune_keys}
    for param, option in requests:
        strategy = option[len(BUCKET_PREFIX):]
        if param not in keys:
            listed = ", ".join(keys) or "not a literal list"
            errors.append(f"{where}: `{param}` is not in its autotune key ({listed})")
        elif keys[param].bucketed:
            already.append(param)
        else:
            added.setdefault(param, strategy)
    return added, already, errors


def _string(text: str, quote: str) -> cst.SimpleString:
    return cst.SimpleString(f"{quote}{text}{quote}")


def _plain(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """The same line break and indent, without a comment (a copied comment would duplicate it)."""
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace.with_changes(first_line=cst.TrailingWhitespace(newline=whitespace.first_line.newline),
                                       empty_lines=[])
    return whitespace


def _entries(bucket: Mapping[str, str], quote: str) -> list[cst.DictElement]:
    items = list(bucket.items())
    return [
        cst.DictElement(_string(name, quote), _string(strategy, quote),
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if position < len(items) - 1
                        else cst.MaybeSentinel.DEFAULT)
        for position, (name, strategy) in enumerate(items)
    ]


def _merge_into(value: cst.BaseExpression, bucket: Mapping[str, str], quote: str) -> cst.Dict:
    if not isinstance(value, cst.Dict):
        raise MigrationError("its bucket= is not a literal dict; add the names by hand")
    new = _entries(bucket, quote)
    if not value.elements:
        return value.with_changes(elements=new)
    elements, tail = append_elements(
        value.elements, [item.with_changes(comma=cst.MaybeSentinel.DEFAULT) for item in new],
        value.lbrace.whitespace_after, value.rbrace.whitespace_before,
    )
    return value.with_changes(elements=elements, rbrace=value.rbrace.with_changes(whitespace_before=tail))


def _bucket_arg(bucket: Mapping[str, str], quote: str, like: cst.Arg | None) -> cst.Arg:
    equal = like.equal if like is not None and isinstance(like.equal, cst.AssignEqual) else cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return cst.Arg(keyword=cst.Name("bucket"), value=cst.Dict(_entries(bucket, quote)), equal=equal)


def _key_position(args: Sequence[cst.Arg]) -> int | None:
    for position, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "key":
            return position
    positional = [position for position, arg in enumerate(args) if arg.keyword is None and not arg.star]
    return positional[1] if len(positional) > 1 else None


def _insert_after(args: list[cst.Arg], position: int, new: cst.Arg,
                  opening: cst.BaseParenthesizableWhitespace) -> list[cst.Arg]:
    """`args` with `new` right after `args[position]`, laid out as the call is (one line or one per line)."""
    if position == len(args) - 1:
        return append_args(args, [new], opening)
    anchor = args[position]
    comma = anchor.comma if isinstance(anchor.comma, cst.Comma) else cst.Comma(
        whitespace_after=cst.SimpleWhitespace(" "))
    inserted = new.with_changes(comma=comma.with_changes(whitespace_after=_plain(comma.whitespace_after)))
    return [*args[: position + 1], inserted, *args[position + 1:]]


def migrate_autotune(call: cst.BaseExpression, bucket: Mapping[str, str], quote: str = '"',
                     is_jitguard: bool = False) -> cst.BaseExpression:
    """`call` (an `autotune(...)` call) as `jitguard.autotune(...)` whose `bucket` holds `bucket`.

    `is_jitguard`: the callee is jitguard's autotune already (kept as written; names merged).
    """
    if not isinstance(call, cst.Call):
        raise MigrationError("the autotune decorator is not a call")
    if not bucket:
        return call
    if not is_jitguard:
        call = call.with_changes(func=cst.Attribute(value=cst.Name("jitguard"), attr=cst.Name("autotune")))
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "bucket":
            args[index] = arg.with_changes(value=_merge_into(arg.value, bucket, quote))
            return call.with_changes(args=args)
    position = _key_position(args)
    if position is None:
        raise MigrationError("its key is not given; write key=[...] first")
    like = args[position]
    new = _bucket_arg(bucket, quote, like if like.keyword is not None else None)
    return call.with_changes(args=_insert_after(args, position, new, call.whitespace_before_args))


def check_migration(kernel: TritonKernel, new_text: str, bucket: Mapping[str, str], is_jitguard: bool) -> None:
    """Raise RuntimeError unless `new_text` is an autotune call whose literal `bucket` holds `bucket`."""
    try:
        expression = ast.parse(new_text, mode="eval").body
    except (SyntaxError, ValueError) as exc:
        raise RuntimeError(
            f"jitguard produced invalid Python for `{kernel.name}`'s autotune ({exc}); nothing written"
        ) from exc
    callee = ast.unparse(expression.func) if isinstance(expression, ast.Call) else ""
    written: dict[object, object] = {}
    for keyword in expression.keywords if isinstance(expression, ast.Call) else []:
        if keyword.arg == "bucket" and isinstance(keyword.value, ast.Dict):
            written = {getattr(k, "value", None): getattr(v, "value", None)
                       for k, v in zip(keyword.value.keys, keyword.value.values)}
    if (callee != "jitguard.autotune" and not is_jitguard) or any(written.get(k) != v for k, v in bucket.items()):
        raise RuntimeError(f"jitguard lost the bucket of `{kernel.name}` ({new_text!r}); nothing written")


def jitguard_autotune_names(tree: ast.Module) -> set[str]:
    """Spellings that mean jitguard's autotune in this file (`jitguard.autotune`, `from jitguard import autotune`)."""
    names = {"jitguard.autotune"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("jitguard", "jitguard.tuning.bucketed_autotune"):
            names |= {alias.asname or alias.name for alias in node.names if alias.name == "autotune"}
        elif isinstance(node, ast.Import):
            names |= {f"{alias.asname}.autotune" for alias in node.names if alias.name == "jitguard" and alias.asname}
    return names


def import_insertion_line(tree: ast.Module, before_line: int) -> int | None:
    """The line after which `import jitguard` goes (the last top-level import above `before_line`;
    0: the top, after a docstring), or None when the module imports jitguard already."""
    last = 0
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name == "jitguard" and a.asname is None for a in node.names):
            return None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and (node.end_lineno or node.lineno) < before_line:
            last = node.end_lineno or node.lineno
        elif last == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str) and node is tree.body[0]:
            last = node.end_lineno or node.lineno  # a module docstring stays first
    return last


def check_strategy(strategy: str) -> str | None:
    """None when `strategy` is a known bucket strategy, else the one-line reason."""
    try:
        parse_strategy(strategy)
    except BucketError as exc:
        return str(exc)
    return None
