"""Append to a bracketed sequence (list, tuple, dict, call arguments) in the layout it already has.

libcst edits shared by the decorator rewrite (jitguard.codemod.fix) and the autotune migration
(jitguard.codemod.autotune_migration): new items follow the existing separators, one line or one
per line, and comments at the end stay where the user put them.

    >>> import libcst as cst
    >>> call = cst.parse_expression("f(a,\\n  b)")
    >>> extra = [cst.Arg(cst.Name("c"))]
    >>> cst.Module([]).code_for_node(call.with_changes(args=append_args(call.args, extra, call.whitespace_before_args)))
    'f(a,\\n  b,\\n  c)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard, TypeVar

import libcst as cst

# Dict entries too (`**rest` included): a `bucket={...}` merge appends entries the same way.
_Element = TypeVar("_Element", cst.Element, cst.Arg, cst.BaseDictElement)


def _plain_whitespace(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """The same line break and indent, without a comment (a copied comment would duplicate it)."""
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(),
            empty_lines=[],
            indent=whitespace.indent,
            last_line=whitespace.last_line,
        )
    return whitespace


def _has_comment(whitespace: object) -> TypeGuard[cst.ParenthesizedWhitespace]:
    return isinstance(whitespace, cst.ParenthesizedWhitespace) and whitespace.first_line.comment is not None


def _without_line_comment(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """`whitespace` less the comment ending its first line; comment lines below it and the bracket's indent stay."""
    if _has_comment(whitespace):
        newline = whitespace.first_line.newline
        return whitespace.with_changes(first_line=cst.TrailingWhitespace(newline=newline))
    return whitespace


#: No whitespace at all: the `tail` when nothing sits before the closing bracket.
NO_SPACE = cst.SimpleWhitespace("")


def append_elements(
    elements: Sequence[_Element],
    new: Sequence[_Element],
    opening: cst.BaseParenthesizableWhitespace,
    tail: cst.BaseParenthesizableWhitespace = NO_SPACE,
) -> tuple[list[_Element], cst.BaseParenthesizableWhitespace]:
    """`elements + new`, with separators that follow the existing layout (one line or one per line).

    `tail` is everything between the last element (and its trailing comma, if any) and the closing
    bracket; `elements` must not hold it. Returns the elements and the new tail. When the new
    elements go on lines of their own, a comment ending the old last line stays on that line
    after the comma added there, and comment lines just above the bracket stay last. On one line,
    the new elements go before the tail, comment included.
    """
    if not elements:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        return [item.with_changes(comma=separator) for item in new[:-1]] + [new[-1]], tail
    last = elements[-1]
    if len(elements) >= 2 and isinstance(elements[-2].comma, cst.Comma):
        previous = elements[-2].comma
        separator = previous.with_changes(whitespace_after=_plain_whitespace(previous.whitespace_after))
    elif isinstance(opening, cst.ParenthesizedWhitespace):
        separator = cst.Comma(whitespace_after=_plain_whitespace(opening))
    else:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    last_separator = separator
    new_tail = tail
    line_break = separator.whitespace_after
    if isinstance(line_break, cst.ParenthesizedWhitespace) and _has_comment(tail):
        last_separator = separator.with_changes(
            whitespace_after=line_break.with_changes(first_line=tail.first_line)
        )
        new_tail = _without_line_comment(tail)
    if isinstance(last.comma, cst.Comma):  # keep the spacing the user put before their comma
        last_separator = last_separator.with_changes(whitespace_before=last.comma.whitespace_before)
    head: list[_Element] = list(elements[:-1])
    head.append(last.with_changes(comma=last_separator))
    body: list[_Element] = [item.with_changes(comma=separator) for item in new[:-1]]
    return head + body + [new[-1].with_changes(comma=last.comma)], new_tail


def append_args(
    args: Sequence[cst.Arg], new: list[cst.Arg], opening: cst.BaseParenthesizableWhitespace
) -> list[cst.Arg]:
    """`append_elements` for call arguments, whose tail sits in the last argument, not in the `)`."""
    if not args:
        return append_elements(args, new, opening)[0]
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        tail = last.comma.whitespace_after
        last = last.with_changes(comma=last.comma.with_changes(whitespace_after=NO_SPACE))
    else:
        tail = last.whitespace_after_arg
        last = last.with_changes(whitespace_after_arg=NO_SPACE)
    joined, tail = append_elements([*args[:-1], last], new, opening, tail)
    end = joined[-1]
    if isinstance(end.comma, cst.Comma):
        end = end.with_changes(comma=end.comma.with_changes(whitespace_after=tail))
    else:
        end = end.with_changes(whitespace_after_arg=tail)
    return [*joined[:-1], end]
