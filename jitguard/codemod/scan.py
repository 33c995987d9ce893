"""Static recompile risks in Triton kernels: rules over each `@triton.jit` function.

Each finding names a rule, the file and line, the kernel and the parameter. Rules (id, name):

- JG101 token-count-specialized (warning): an int parameter named like a token/batch/sequence
  count is specialized; every call moves it among `== 1`, `% 16 == 0` and other -> up to 3
  compiles per other key. Advice `do_not_specialize`.
- JG102 size-specialized (info): an int parameter used as a size (mask comparison, `tl.cdiv`,
  loop bound) is specialized. Fine for model dimensions; demote it if it changes at run time.
- JG103 runtime-size-constexpr (warning): a `tl.constexpr` named like a token count (one compile
  per value). Advice `constexpr_values`.
- JG104 unknown-name-in-demotion-list (warning): `do_not_specialize` names a parameter that does
  not exist, or an index out of range; Triton ignores it silently.
- JG105 constexpr-in-demotion-list (warning): `do_not_specialize` lists a `tl.constexpr`
  parameter; Triton raises a CompilationError at the first compile.
- JG106 derived-stride-specialized (info): a stride is still specialized in a kernel whose token
  count is already in `do_not_specialize`; a stride computed from the token count (an outer dimension of a [G, T, X] buffer,
  a padded MN-major scale layout) flips classes as the count changes.

A `# jitguard: ignore` or `# jitguard: ignore[JG101,JG106]` comment on the parameter's line or
on the `def` line silences findings there.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from jitguard.codemod.files import SourceError, read_source
from jitguard.codemod.kernels import (
    DEMOTION_OPTIONS,
    KernelParam,
    TritonKernel,
    dotted_name,
    find_kernels,
    might_contain_kernels,
    parse_source,
)


@dataclass(frozen=True)
class Rule:
    """A scan rule: id, short name, severity and the advice code its findings carry."""

    id: str
    name: str
    severity: str  # "warning" | "info"
    advice: str | None


RULES = {
    rule.id: rule
    for rule in (
        Rule("JG101", "token-count-specialized", "warning", "do_not_specialize"),
        Rule("JG102", "size-specialized", "info", None),
        Rule("JG103", "runtime-size-constexpr", "warning", "constexpr_values"),
        Rule("JG104", "unknown-name-in-demotion-list", "warning", None),
        Rule("JG105", "constexpr-in-demotion-list", "warning", None),
        Rule("JG106", "derived-stride-specialized", "info", None),
    )
}


@dataclass(frozen=True)
class Finding:
    """One static finding (the `findings[]` record of `jitguard scan --json`)."""

    rule: str
    file: str
    line: int
    kernel: str
    param: str | None
    message: str
    advice: str | None
    severity: str
    name: str
    qualname: str = ""  # `Class.kernel` when the kernel is defined inside a class or function

    def to_json(self) -> dict[str, object]:
        """The JSON record: rule, file, line, kernel, param, message, advice (+ severity, name, qualname)."""
        return asdict(self)


@dataclass
class FileScan:
    """What scanning one file gave: findings, kernels seen, or the error that stopped it."""

    path: str
    findings: list[Finding]
    kernels: int
    error: str | None = None


# Words (between underscores, lower-cased) that make an int parameter a token/batch count.
TOKEN_WORDS = frozenset(
    {"token", "tokens", "tok", "toks", "seq", "seqs", "seqlen", "seqlens", "req", "reqs", "request", "requests",
     "batch", "batches", "bs", "rows"}
)
# Words that make such a name an id, an index, a flag or a per-item constant, not a count.
NOT_A_COUNT_WORDS = frozenset(
    {"id", "ids", "idx", "indices", "index", "mask", "offs", "loc", "locs", "map", "mapping", "table", "data",
     "factor", "quant", "per", "has", "is", "use", "ptr", "ptrs", "scale", "stride"}
)
# Whole names that count tokens in GEMM/elementwise conventions.
TOKEN_NAMES = frozenset({"M", "EM", "T", "n_elements", "numel", "n_elem", "num_elements", "n_rows", "num_rows"})
# Words of a stride name that say it walks the token axis (so it is a model dimension).
TOKEN_AXIS_WORDS = TOKEN_WORDS | {"m", "t", "row", "pos", "0", "d0", "dim0"}
FLOAT_ANNOTATIONS = ("float", "float16", "float32", "float64", "bfloat16", "fp32", "fp16")
SUPPRESSION = re.compile(r"#\s*jitguard:\s*ignore(?:\[([A-Za-z0-9_,\s]+)\])?")


def _words(name: str) -> list[str]:
    return [word for word in name.lower().split("_") if word]


def is_token_count_name(name: str) -> bool:
    """True for names like `num_tokens`, `seq_len`, `EM`, `n_elements`, `batch_size` (not strides)."""
    words = _words(name)
    if set(words) & NOT_A_COUNT_WORDS or name.lower().startswith("max_num") or name.endswith("ptr"):
        return False  # ids, masks, pointers, buffer capacities (max_num_reqs) are no per-call count
    return name in TOKEN_NAMES or any(word in TOKEN_WORDS for word in words)


def _is_stride_name(name: str) -> bool:
    return "stride" in _words(name) or name.lower().startswith("stride")


def _walks_token_axis(name: str) -> bool:
    """`stride_am`, `stride_cm`, `out_stride_token`, `query_stride_0`: strides along the token axis."""
    words = _words(name)
    if set(words) & TOKEN_AXIS_WORDS:
        return True
    after = words[words.index("stride") + 1 :] if "stride" in words else []
    return any(len(word) == 2 and word[1] in "mt" for word in after)


def _leftmost(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        node = node.left
    return node


@dataclass
class _Uses:
    sizes: dict[str, str]  # param -> first size-like use ("tl.cdiv", "a loop bound", "a comparison")
    pointers: set[str]


def _parameter_uses(function: ast.FunctionDef, params: set[str]) -> _Uses:
    sizes: dict[str, str] = {}
    pointers: set[str] = set()

    def mark(expression: ast.AST, use: str) -> None:
        for node in ast.walk(expression):
            if isinstance(node, ast.Name) and node.id in params:
                sizes.setdefault(node.id, use)

    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            callee = dotted_name(node.func) or ""
            last = callee.rsplit(".", 1)[-1]
            if last == "cdiv":
                for arg in node.args:
                    mark(arg, "tl.cdiv")
            elif last in ("range", "static_range"):
                for arg in node.args:
                    mark(arg, "a loop bound")
            elif (last in ("load", "store") or last.startswith("atomic_")) and node.args:
                base = _leftmost(node.args[0])
                if isinstance(base, ast.Name):
                    pointers.add(base.id)
        elif isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                mark(operand, "a comparison")
        elif isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
            pointers.add(node.value.id)
    return _Uses(sizes, pointers)


def _looks_like_pointer(param: KernelParam, uses: _Uses) -> bool:
    lowered = param.name.lower()
    return param.name in uses.pointers or lowered.endswith(("ptr", "ptrs", "_pointer")) or lowered.startswith("ptr_")


def _is_float(param: KernelParam) -> bool:
    return param.annotation is not None and param.annotation.split(".")[-1] in FLOAT_ANNOTATIONS


def _suppressed(lines: list[str], line: int, rule: str) -> bool:
    if not 1 <= line <= len(lines):
        return False
    match = SUPPRESSION.search(lines[line - 1])
    if match is None:
        return False
    listed = match.group(1)
    return listed is None or rule in {item.strip() for item in listed.split(",")}


def called_names(kernels: list[TritonKernel]) -> set[str]:
    """Names of functions called inside these kernels (`helper(...)`, `mod.helper(...)`)."""
    names: set[str] = set()
    for kernel in kernels:
        if kernel.node is None:
            continue
        for node in ast.walk(kernel.node):
            if isinstance(node, ast.Call):
                callee = dotted_name(node.func)
                if callee:
                    names.add(callee.rsplit(".", 1)[-1])
    return names


def scan_kernel(
    kernel: TritonKernel, file: str, lines: list[str] | None = None, device_helper: bool = False
) -> list[Finding]:
    """Apply every rule to one kernel found by `find_kernels` (its `node` must be set).

    A `device_helper` (a jit function other kernels call) is inlined into its callers and never
    specialized on its own, so only the rules about its decorator lists apply.
    """
    lines = lines or []
    found: list[Finding] = []

    def add(rule_id: str, line: int, param: str | None, message: str) -> None:
        if _suppressed(lines, line, rule_id) or _suppressed(lines, kernel.line, rule_id):
            return
        rule = RULES[rule_id]
        found.append(
            Finding(rule.id, file, line, kernel.name, param, message, rule.advice, rule.severity, rule.name,
                    kernel.qualname)
        )

    names = {param.name for param in kernel.params}
    for option in DEMOTION_OPTIONS:
        listed = kernel.demotions.get(option)
        if listed is None:
            continue
        for entry in listed.entries:
            if isinstance(entry, int):
                if not -len(kernel.params) <= entry < len(kernel.params):
                    add("JG104", listed.line, None,
                        f"{option} lists index {entry} but `{kernel.name}` has {len(kernel.params)} parameters; "
                        "Triton ignores it silently")
                    continue
                param = kernel.params[entry]
            elif entry not in names:
                close = difflib.get_close_matches(entry, sorted(names), n=1, cutoff=0.75)
                hint = f" (did you mean `{close[0]}`?)" if close else ""
                add("JG104", listed.line, entry,
                    f"{option} lists `{entry}`, which is not a parameter of `{kernel.name}`{hint}; "
                    "Triton ignores it silently")
                continue
            else:
                param = kernel.param(entry)  # type: ignore[assignment]
            if param is not None and param.is_constexpr:
                add("JG105", listed.line, param.name,
                    f"{option} lists `{param.name}`, a tl.constexpr: Triton raises a CompilationError at "
                    "the first compile; remove it from the list")
    if kernel.node is None or device_helper:
        return found
    demoted = kernel.demoted("do_not_specialize") | kernel.demoted("do_not_specialize_on_alignment")
    uses = _parameter_uses(kernel.node, names)
    runtime_ints = [
        param
        for param in kernel.params
        if not param.is_constexpr and not _is_float(param) and not _looks_like_pointer(param, uses)
    ]
    demotes_token_count = False
    for param in runtime_ints:
        if is_token_count_name(param.name):
            if param.name in kernel.demoted("do_not_specialize"):
                demotes_token_count = True
            if param.name not in demoted:
                use = uses.sizes.get(param.name)
                why = f", used in {use}" if use else ""
                add("JG101", param.line, param.name,
                    f"`{param.name}` looks like a token/batch count{why} and is specialized: values 1, "
                    "multiples of 16 and others compile separate variants; add it to do_not_specialize")
        elif param.name in uses.sizes and param.name not in demoted and not _is_stride_name(param.name):
            add("JG102", param.line, param.name,
                f"`{param.name}` is used in {uses.sizes[param.name]} and is specialized (1 / multiple of 16 / "
                "other); fine for a model dimension, demote it if it changes from call to call")
    for param in kernel.params:
        if param.is_constexpr and not param.name.isupper() and is_token_count_name(param.name) and not (
            param.name.lower().startswith("max_")
        ):
            add("JG103", param.line, param.name,
                f"`{param.name}: tl.constexpr` looks like a runtime size: every new value compiles a new "
                "variant; make it a runtime argument (or bucket its values)")
    # Someone demoted the count but left the strides: the state vLLM's inverse-RoPE kernel was in.
    if demotes_token_count:
        for param in runtime_ints:
            if _is_stride_name(param.name) and param.name not in demoted and not _walks_token_axis(param.name):
                add("JG106", param.line, param.name,
                    f"stride `{param.name}` is specialized while the token count is demoted; if it is "
                    "computed from that count (outer dim of a [G, T, X] buffer, padded MN-major scales) it "
                    "flips classes as the count changes: demote it")
    return found


def source_lines(source: bytes) -> list[str]:
    """Lines numbered as Python numbers them (str.splitlines would also split on form feeds)."""
    return re.split(r"\r\n|\r|\n", source.decode("utf-8", errors="replace"))


def scan_source(source: bytes, file: str) -> tuple[list[Finding], int]:
    """Findings and kernel count for one file's bytes; raises SyntaxError/ValueError if unparsable."""
    if not might_contain_kernels(source):
        return [], 0
    tree = parse_source(source)
    kernels = find_kernels(source, tree)
    lines = source_lines(source)
    helpers = called_names(kernels)
    findings = [
        finding
        for kernel in kernels
        for finding in scan_kernel(kernel, file, lines, device_helper=kernel.name in helpers)
    ]
    return findings, len(kernels)


def scan_file(path: Path) -> FileScan:
    """Scan one file; read and syntax errors come back in `error`, never as exceptions."""
    try:
        source = read_source(path)
        findings, kernels = scan_source(source, str(path))
    except SourceError as exc:
        return FileScan(str(path), [], 0, str(exc))
    except SyntaxError as exc:
        return FileScan(str(path), [], 0, f"syntax error at line {exc.lineno}: {exc.msg}")
    except (ValueError, RecursionError) as exc:
        return FileScan(str(path), [], 0, f"cannot parse: {exc}")
    return FileScan(str(path), findings, kernels)
