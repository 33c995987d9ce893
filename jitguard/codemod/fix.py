"""Rewrite Triton `jit` decorators so chosen parameters stop specializing.

Only the bytes of the decorator expression that must change are replaced; everything else in
the file, comments and line endings included, is kept byte for byte. The decorator expression
itself is edited as a libcst tree, so its own comments and layout survive too.

    >>> src = b"import triton\\n@triton.jit\\ndef k(x_ptr, n):\\n    pass\\n"
    >>> print(fix_source(src, {("k", 3): [("n", "do_not_specialize")]}).source.decode())
    import triton
    @triton.jit(do_not_specialize=["n"])
    def k(x_ptr, n):
        pass
    <BLANKLINE>
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from jitguard.codemod.autotune_migration import (
    MigrationError,
    check_migration,
    import_insertion_line,
    is_bucket_option,
    jitguard_autotune_names,
    migrate_autotune,
    plan_buckets,
)
from jitguard.codemod.kernels import DEMOTION_OPTIONS, TritonKernel, find_kernels, where_to_add
from jitguard.codemod.sequence_edits import NO_SPACE, append_args, append_elements
from jitguard.codemod.source_text import UTF8_ENCODINGS, declared_encoding

#: (kernel name, `def` line) -> [(parameter, option)], the plan for one file: for every kernel made from that
#: function; with a third item, the line of its jit decorator or call (`TritonKernel.decorator_line`), for that one.
PlanKey = tuple[str, int] | tuple[str, int, int]
FilePlan = Mapping[PlanKey, Sequence[tuple[str, str]]]


class FixError(Exception):
    """A requested change that cannot be made; the message names kernel and parameter."""


@dataclass
class KernelChange:
    """What `fix_source` did (or would do) to one kernel."""

    kernel: str
    line: int
    added: dict[str, list[str]]  # option -> parameter names added
    already: list[str] = field(default_factory=list)  # parameters that were demoted already
    qualname: str = ""  # `Class.kernel` for kernels defined inside a class or function
    binding: str = ""  # for a function bound by several jit calls, which one (`TritonKernel.binding_label`)

    @property
    def label(self) -> str:
        """How output names the kernel: its qualname, and for one of several bindings, which one."""
        name = self.qualname or self.kernel
        return f"{name} ({self.binding})" if self.binding else name


@dataclass
class FixOutcome:
    """The new source, what changed, and the requests that could not be applied."""

    source: bytes
    changes: list[KernelChange]
    errors: list[str]

    @property
    def changed(self) -> bool:
        """True when at least one decorator was rewritten."""
        return any(change.added for change in self.changes)

    @property
    def hand_edits(self) -> list[str]:
        """The `errors` that are findings left for a person (`HandEdit`), not bad input."""
        return [error for error in self.errors if isinstance(error, HandEdit)]


class HandEdit(str):
    """A request `fix` cannot write but a person can: a computed demotion list, a tl.constexpr to make a
    runtime argument, a decorator it cannot rewrite. `fix` exits 1 for these (findings left), 2 only for
    bad input."""


def _string(name: str, quote: str) -> cst.SimpleString:
    return cst.SimpleString(f"{quote}{name}{quote}")


def _option_arg(option: str, names: list[str], quote: str) -> cst.Arg:
    none: list[cst.Element] = []
    elements, _ = append_elements(none, [cst.Element(_string(name, quote)) for name in names], NO_SPACE)
    return cst.Arg(
        keyword=cst.Name(option),
        value=cst.List(elements),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def _extend_sequence(value: cst.BaseExpression, names: list[str], quote: str) -> cst.BaseExpression:
    """`value` (a list or tuple that `DemotionList.literal` judged literal) with `names` appended."""
    new = [cst.Element(_string(name, quote)) for name in names]
    if isinstance(value, cst.List):
        # A literal list (DemotionList.literal) holds no starred element: each is a cst.Element
        literal = cast(Sequence[cst.Element], value.elements)
        elements, tail = append_elements(
            literal, new, value.lbracket.whitespace_after, value.rbracket.whitespace_before
        )
        return value.with_changes(elements=elements, rbracket=value.rbracket.with_changes(whitespace_before=tail))
    if not isinstance(value, cst.Tuple) or not value.lpar:
        # kernels.py's `DemotionList.literal` is the one judge of "literal list"; `plan_for_kernel`
        # refuses the others, so reaching here is a disagreement between the two trees: a bug.
        raise FixError("is not a list or parenthesized tuple that fix can extend")
    literal = cast(Sequence[cst.Element], value.elements)  # literal: no starred element, as for the list above
    elements, tail = append_elements(literal, new, value.lpar[0].whitespace_after, value.rpar[0].whitespace_before)
    value = value.with_changes(rpar=[value.rpar[0].with_changes(whitespace_before=tail), *value.rpar[1:]])
    if len(elements) == 1:  # ("a",) is a tuple only with its comma
        elements[0] = elements[0].with_changes(comma=cst.Comma())
    elif len(value.elements) == 1 and not _spans_lines(value):  # (4,) grows into (4, "n"), not (4, "n",)
        elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return value.with_changes(elements=elements)


def _spans_lines(value: cst.Tuple) -> bool:
    """True when the tuple's brackets hold a line break (its trailing comma is then layout, kept)."""
    code = cst.Module([]).code_for_node(value)
    return "\n" in code or "\r" in code


def add_demotions(
    decorator: cst.BaseExpression, additions: Mapping[str, list[str]], quote: str = '"'
) -> cst.BaseExpression:
    """Return `decorator` (`triton.jit`, `jit(...)`, ...) with `additions` merged into its options.

    `additions` maps an option (`do_not_specialize` or `do_not_specialize_on_alignment`) to
    parameter names that are not listed yet; existing entries keep their place and spelling.
    """
    wanted = {option: names for option, names in additions.items() if names}
    if not wanted:
        return decorator
    if not isinstance(decorator, cst.Call):
        args = [_option_arg(option, wanted[option], quote) for option in DEMOTION_OPTIONS if option in wanted]
        return cst.Call(func=decorator, args=append_elements([], args, NO_SPACE)[0])
    args = list(decorator.args)
    missing: list[cst.Arg] = []
    for option in DEMOTION_OPTIONS:
        if option not in wanted:
            continue
        for position, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == option:
                try:
                    args[position] = arg.with_changes(value=_extend_sequence(arg.value, wanted[option], quote))
                except FixError as exc:
                    raise FixError(f"{option} {exc}") from None
                break
        else:
            missing.append(_option_arg(option, wanted[option], quote))
    if missing:
        args = append_args(args, missing, decorator.whitespace_before_args)
    return decorator.with_changes(args=args)


# The quote probe reads at most this many string literals and lines: a file's style shows early,
# and an unbounded pass made `fix` cost a whole extra tokenize of every large file.
QUOTE_SAMPLE_STRINGS = 200
QUOTE_SAMPLE_LINES = 3000


def _majority_quote(text: str) -> str:
    """The majority quote among the file's first string literals (comments don't count)."""
    single = double = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > QUOTE_SAMPLE_LINES or single + double >= QUOTE_SAMPLE_STRINGS:
                break
            if token.type == tokenize.STRING:
                body = token.string.lstrip("rRbBuUfF")
                if body.startswith("'"):
                    single += 1
                elif body.startswith('"'):
                    double += 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return "'" if single > double else '"'


class _FileQuote:
    """The file's quote style, computed on first use and then reused (one pass per file, not per kernel)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._quote: str | None = None

    def for_decorator(self, decorator_text: str) -> str:
        """The decorator's own quote style, else the file's majority."""
        for quote in ('"', "'"):
            if quote in decorator_text:
                return quote
        if self._quote is None:
            self._quote = _majority_quote(self._text)
        return self._quote


def _newline_of(line: bytes) -> str:
    """The line ending of `line` (a multi-line decorator keeps the file's CRLF or LF)."""
    if line.endswith(b"\r\n"):
        return "\r\n"
    return "\r" if line.endswith(b"\r") else "\n"


def _line_offsets(source: bytes) -> list[int]:
    """Byte offset of the start of each line (1-based line n starts at offsets[n-1])."""
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _kernel_where(kernel: TritonKernel) -> str:
    """`kernel `k` (line 5)` in messages; for one of several jit calls on one function, which call."""
    if not kernel.several_bindings:
        return f"kernel `{kernel.name}` (line {kernel.line})"
    bound = f", bound as `{'`, `'.join(kernel.bound_as)}`" if kernel.bound_as else ""
    return f"kernel `{kernel.name}` (line {kernel.line}{bound}, jit call at line {kernel.decorator_line})"


def plan_for_kernel(kernel: TritonKernel, requests: Sequence[tuple[str, str]]) -> tuple[KernelChange, list[str]]:
    """Decide which names to add to which option of one kernel; return the change and errors."""
    change = KernelChange(kernel.name, kernel.line, {}, qualname=kernel.qualname, binding=kernel.binding_label)
    errors: list[str] = []
    where = _kernel_where(kernel)
    listed = {option: kernel.demoted(option) for option in DEMOTION_OPTIONS}
    by_hand: dict[str, list[str]] = {}  # option -> names its computed list lacks (one message each)
    for param_name, option in requests:
        if option not in DEMOTION_OPTIONS:
            errors.append(f"{where}: unknown option `{option}`")
            continue
        param = kernel.param(param_name)
        if param is None:
            known = ", ".join(p.name for p in kernel.params)
            errors.append(f"{where} has no parameter `{param_name}` (parameters: {known})")
            continue
        if param.is_constexpr:
            errors.append(HandEdit(
                f"{where}: `{param_name}` is tl.constexpr and cannot be demoted (Triton raises a "
                "CompilationError); make it a runtime argument or bucket its values"
            ))
            continue
        stronger = listed["do_not_specialize"]
        if param_name in listed[option] or (option != "do_not_specialize" and param_name in stronger):
            if param_name not in change.already:
                change.already.append(param_name)
            continue
        existing = kernel.demotions.get(option)
        if existing is not None and not existing.literal:
            by_hand.setdefault(option, []).append(param_name)
            continue
        added = change.added.setdefault(option, [])
        if param_name not in added:
            added.append(param_name)
    for option, names in by_hand.items():
        errors.append(HandEdit(f"{where}: {where_to_add(kernel.demotions[option], names, kernel)}"))
    # do_not_specialize covers the alignment demotion: a name asked both ways is written once, there.
    full = set(change.added.get("do_not_specialize", []))
    aligned = change.added.get("do_not_specialize_on_alignment")
    if full and aligned:
        change.added["do_not_specialize_on_alignment"] = [name for name in aligned if name not in full]
        if not change.added["do_not_specialize_on_alignment"]:
            del change.added["do_not_specialize_on_alignment"]
    return change, errors


def _decoded(source: bytes) -> tuple[str, str]:
    """(encoding, text) of `source`; raises FixError when it cannot be edited byte for byte."""
    try:
        encoding = declared_encoding(source)
        text = source.decode(encoding)
    except SyntaxError as exc:  # an unknown codec or a BOM against the cookie
        raise FixError(f"bad encoding declaration ({exc})") from None
    except UnicodeDecodeError as exc:
        raise FixError(f"not valid {exc.encoding} text (byte {exc.start})") from None
    if encoding not in UTF8_ENCODINGS and text.encode(encoding) != source:
        raise FixError(f"{encoding} text that does not re-encode byte for byte; edit it by hand")
    return encoding, text


@dataclass
class _Edit:
    """One decorator expression to rewrite: the jit call (`demotions`: option -> names to add) or the
    autotune call (`bucket`: key name -> strategy), of `kernel`, whose `change` records what is added."""

    span: tuple[int, int, int, int]
    kernel: TritonKernel
    change: KernelChange
    demotions: dict[str, list[str]] | None = None
    bucket: dict[str, str] | None = None


def _requested_kernels(kernels: list[TritonKernel], plan: FilePlan
                       ) -> tuple[list[tuple[TritonKernel, list[tuple[str, str]]]], list[str]]:
    """Each planned kernel with its requests in plan order, and an error per plan entry not found.

    A function bound by several jit calls is one kernel per call, all under its (name, def line):
    (name, line) asks for every binding, (name, line, jit line) for one."""
    by_function: dict[tuple[str, int], list[TritonKernel]] = defaultdict(list)
    for kernel in kernels:
        by_function[(kernel.name, kernel.line)].append(kernel)
    requested: dict[int, tuple[TritonKernel, list[tuple[str, str]]]] = {}
    errors: list[str] = []
    for key, requests in sorted(plan.items(), key=lambda item: item[0][1:]):
        bindings = by_function.get((key[0], key[1]), [])
        chosen = [kernel for kernel in bindings if len(key) == 2 or kernel.decorator_line == key[2]]
        if not chosen:
            errors.append(f"kernel `{key[0]}` not found at line {key[1]}")
            continue
        for kernel in chosen:
            _, asked = requested.setdefault(id(kernel), (kernel, []))
            asked += [request for request in requests if request not in asked]
    return list(requested.values()), errors


def _planned_edits(requested: list[tuple[TritonKernel, list[tuple[str, str]]]]
                   ) -> tuple[list[KernelChange], list[_Edit], list[str]]:
    """(each kernel's change, the decorator edits that make them, errors): a demotion edits the jit
    call, an autotune bucket the autotune call."""
    changes: list[KernelChange] = []
    edits: list[_Edit] = []
    errors: list[str] = []
    for kernel, requests in requested:
        change, kernel_errors = plan_for_kernel(kernel, [r for r in requests if not is_bucket_option(r[1])])
        errors.extend(kernel_errors)
        changes.append(change)
        if change.added:
            edits.append(_Edit(kernel.decorator_span, kernel, change, demotions=dict(change.added)))
        buckets = [request for request in requests if is_bucket_option(request[1])]
        if buckets:
            bucket, already, bucket_errors = plan_buckets(kernel, buckets)
            errors.extend(bucket_errors)
            change.already += [name for name in already if name not in change.already]
            if bucket and kernel.autotune_span is not None:
                change.added["bucket"] = [f"{name}: {strategy}" for name, strategy in bucket.items()]
                edits.append(_Edit(kernel.autotune_span, kernel, change, bucket=bucket))
    return changes, edits, errors


def _rewritten(edit: _Edit, decorator: str, newline: str, quote: str, tree: ast.Module | None) -> tuple[str, bool]:
    """(the decorator's new text, whether the autotune call was `jitguard.autotune` already); raises
    FixError, MigrationError or cst.ParserSyntaxError when it cannot be rewritten."""
    expression = cst.parse_expression(decorator, cst.PartialParserConfig(default_newline=newline))
    is_jitguard = False
    if edit.bucket is not None:
        callee = ast.parse(decorator, mode="eval").body
        is_jitguard = (tree is not None and isinstance(callee, ast.Call)
                       and ast.unparse(callee.func) in jitguard_autotune_names(tree))
        new_expression = migrate_autotune(expression, edit.bucket, quote, is_jitguard)
    else:
        new_expression = add_demotions(expression, edit.demotions or {}, quote)
    new_text = cst.Module([], default_newline=newline).code_for_node(new_expression)
    if edit.bucket is not None:
        check_migration(edit.kernel, new_text, edit.bucket, is_jitguard)
    else:
        _check_rewrite(edit.kernel, new_text, edit.demotions or {})
    return new_text, is_jitguard


def _hand_edit(edit: _Edit, exc: Exception, encoding: str) -> HandEdit:
    """Why an edit must be done by hand, in one line naming the kernel."""
    where = _kernel_where(edit.kernel)
    if isinstance(exc, cst.ParserSyntaxError):
        return HandEdit(f"{where}: cannot read the decorator ({exc.message}); edit it by hand")
    if isinstance(exc, UnicodeEncodeError):
        names = ", ".join(edit.bucket or edit.demotions or {})
        return HandEdit(f"{where}: `{names}` cannot be written in the file's encoding ({encoding}); edit it by hand")
    return HandEdit(f"{where}: {exc}; edit it by hand")


def _splice(work: bytes, replacements: list[tuple[int, int, bytes]]) -> bytes:
    pieces: list[bytes] = []
    cursor = 0
    for start, end, new_bytes in sorted(replacements, key=lambda item: item[:2]):
        pieces += [work[cursor:start], new_bytes]
        cursor = end
    pieces.append(work[cursor:])
    return b"".join(pieces)


def _replacements(work: bytes, text: str, encoding: str, edits: list[_Edit], errors: list[str]
                  ) -> list[tuple[int, int, bytes]]:
    """The byte replacements that make `edits` in `work` (UTF-8), from the top; an edit that cannot be
    made is dropped from its change and named in `errors`. Adds `import jitguard` for a new
    `jitguard.autotune`."""
    offsets = _line_offsets(work)
    file_quote = _FileQuote(text)
    tree = ast.parse(text) if any(edit.bucket is not None for edit in edits) else None
    replacements: list[tuple[int, int, bytes]] = []
    migrated_at: int | None = None  # the first autotune call rewritten (`import jitguard` goes above it)
    for edit in sorted(edits, key=lambda item: item.span):  # spans never overlap
        line, col, end_line, end_col = edit.span
        start, end = offsets[line - 1] + col, offsets[end_line - 1] + end_col
        decorator = work[start:end].decode("utf-8")
        newline = _newline_of(work[offsets[line - 1] : offsets[line]])
        try:
            new_text, is_jitguard = _rewritten(edit, decorator, newline, file_quote.for_decorator(decorator), tree)
            if encoding not in UTF8_ENCODINGS:
                new_text.encode(encoding)  # a name the file's encoding cannot spell is refused here
        except (FixError, MigrationError, cst.ParserSyntaxError, UnicodeEncodeError) as exc:
            errors.append(_hand_edit(edit, exc, encoding))
            _drop(edit.change, edit.bucket is not None)
            continue
        if edit.bucket is not None and not is_jitguard and migrated_at is None:
            migrated_at = line
        replacements.append((start, end, new_text.encode("utf-8")))
    if migrated_at is not None and tree is not None:
        replacements += _jitguard_import(work, tree, migrated_at, offsets)
    return replacements


def fix_source(source: bytes, plan: FilePlan, kernels: list[TritonKernel] | None = None) -> FixOutcome:
    """Apply `plan` to the kernels of one file; other bytes are returned unchanged.

    A plan entry whose kernel is not found is reported in `errors`, as is every request that
    cannot be applied (not a parameter, a constexpr, a non-literal list). A file in another
    encoding than UTF-8 (a PEP 263 cookie) is edited as text and written back in that encoding.
    """
    try:
        encoding, text = _decoded(source)
    except FixError as exc:
        return FixOutcome(source, [], [str(exc)])
    # `ast` column offsets count UTF-8 bytes, so a file in another encoding is edited as UTF-8.
    work = source if encoding in UTF8_ENCODINGS else text.encode("utf-8")
    if work is not source:
        kernels = find_kernels(work, ast.parse(text))
    elif kernels is None:
        kernels = find_kernels(source)
    requested, errors = _requested_kernels(kernels, plan)
    changes, edits, planning_errors = _planned_edits(requested)
    errors += planning_errors
    if not any(change.added for change in changes):
        return FixOutcome(source, changes, errors)
    new_work = _splice(work, _replacements(work, text, encoding, edits, errors))
    new_source = new_work if work is source else new_work.decode("utf-8").encode(encoding)
    return FixOutcome(new_source, changes, errors)


def _drop(change: KernelChange, is_bucket: bool) -> None:
    """Forget the part of `change` that could not be written."""
    if is_bucket:
        change.added.pop("bucket", None)
    else:
        for option in DEMOTION_OPTIONS:
            change.added.pop(option, None)


def _jitguard_import(
    work: bytes, tree: ast.Module, before_line: int, offsets: list[int]
) -> list[tuple[int, int, bytes]]:
    """Insert `import jitguard` after the last top-level import above `before_line` ([] if present)."""
    after = import_insertion_line(tree, before_line)
    if after is None:
        return []
    position = offsets[after] if after < len(offsets) else len(work)
    newline = _newline_of(work[offsets[max(after - 1, 0)]:offsets[after]]) if after else _newline_of(
        work[: offsets[1] if len(offsets) > 1 else len(work)])
    prefix = b"" if position == 0 or work[position - 1:position] in (b"\n", b"\r") else newline.encode()
    return [(position, position, prefix + b"import jitguard" + newline.encode())]


def _check_rewrite(kernel: TritonKernel, new_text: str, added: Mapping[str, list[str]]) -> None:
    """Raise RuntimeError unless `new_text` is an expression whose lists hold every added name.

    Only decorator expressions are replaced, each by another expression, so checking them (not
    re-parsing the whole file) proves the file still parses; a bug must never reach the user's file.
    """
    try:
        expression = ast.parse(new_text, mode="eval").body
    except (SyntaxError, ValueError) as exc:
        raise RuntimeError(f"jitguard produced invalid Python for `{kernel.name}` ({exc}); nothing written") from exc
    listed: dict[str, set[object]] = {}
    for keyword in expression.keywords if isinstance(expression, ast.Call) else []:
        if keyword.arg in DEMOTION_OPTIONS and isinstance(keyword.value, (ast.List, ast.Tuple)):
            listed[keyword.arg] = {getattr(element, "value", None) for element in keyword.value.elts}
    for option, names in added.items():
        if not set(names) <= listed.get(option, set()):
            raise RuntimeError(f"jitguard lost `{option}` entries of `{kernel.name}` ({new_text!r}); nothing written")
