"""A failed price compile says why in one line, and what the compiler prints while pricing (a failing
MLIR pass prints the whole module) never reaches the user's terminal."""

import os

import pytest

from jitguard.price.demotion_cost import _compiler_output_kept_apart, error_line


class CompilationError(Exception):
    """Shaped as Triton's: 'at L:C:', the source excerpt, a caret line, then the message if any."""


def _raised(exc: BaseException, cause: BaseException | None = None) -> BaseException:
    try:
        if cause is None:
            raise exc
        try:
            raise cause
        except type(cause) as inner:
            raise exc from inner
    except BaseException as caught:
        return caught


EXCERPT = "at 3:4:\n    x = tl.load(p)\n        ^"


@pytest.mark.parametrize("exc, line", [
    (_raised(CompilationError(EXCERPT), RuntimeError("error encountered during parsing")),
     "RuntimeError: error encountered during parsing"),
    (_raised(CompilationError(EXCERPT + "\nunsupported tensor index")), "CompilationError: unsupported tensor index"),
    (_raised(CompilationError(EXCERPT)), "CompilationError at 3:4:"),
    (_raised(ValueError("first\nthe reason")), "ValueError: the reason"),
    (_raised(KeyError("BLOCK")), "KeyError: 'BLOCK'"),
])
def test_the_reason_is_the_message_not_the_caret(exc: BaseException, line: str) -> None:
    assert error_line(exc) == line


def test_the_compilers_output_is_kept_off_the_terminal(capfd: pytest.CaptureFixture[str]) -> None:
    print("before", flush=True)
    with _compiler_output_kept_apart():
        os.write(1, b'"tt.func"() <{sym_name = "kernel"}> ...\n')
        os.write(2, b"#loc = loc(\"kernel.py\":3:4)\n")
    print("after", flush=True)
    out, err = capfd.readouterr()
    assert out == "before\nafter\n" and err == ""
