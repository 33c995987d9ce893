"""Python source bytes as Python reads them: the PEP 263 encoding cookie or a UTF-8 BOM, else UTF-8.

    >>> declared_encoding(b"# -*- coding: latin-1 -*-\\nx = 1\\n")
    'iso-8859-1'
"""

from __future__ import annotations

import re
import tokenize

# The first two lines, ended as Python ends them (a lone CR too); only they may hold the cookie.
_FIRST_TWO_LINES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?[^\r\n]*(?:\r\n|\r|\n)?")

UTF8_ENCODINGS = ("utf-8", "utf-8-sig")


def declared_encoding(source: bytes) -> str:
    """The codec Python decodes `source` with (normalised: `iso-8859-1`, `utf-8`, `utf-8-sig`).

    Raises SyntaxError for a cookie naming an unknown codec, or a BOM that contradicts the cookie.
    """
    head = _FIRST_TWO_LINES.match(source)
    lines = iter(re.findall(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", head.group(0) if head else b""))
    encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    return encoding
