"""triton_compat.ClassPatch, the one way jitguard patches Triton's classes: what it restores."""

from __future__ import annotations

import pytest

from jitguard.triton_compat import ClassPatch


class Launcher:
    def run(self) -> str:
        return "triton"


TRITONS_RUN = Launcher.__dict__["run"]


class Wrapped(Launcher):
    """A subclass that inherits `run`: patching it must not copy the parent's onto it for good."""


def ours(self: object) -> str:
    return "jitguard"


def theirs(self: object) -> str:
    return "another tool"


@pytest.mark.parametrize("cls, replaced_later_by, after_restore", [
    (Launcher, None, "triton"),        # defined on the class: put back
    (Wrapped, None, "triton"),         # inherited: deleted again, the parent's shows through
    (Launcher, theirs, "another tool"),  # replaced since by another tool: left to that tool
])
def test_restore_puts_back_exactly_what_was_there(cls: type, replaced_later_by: object, after_restore: str) -> None:
    defined_before = dict(cls.__dict__)
    patch = ClassPatch()
    patch.replace(cls, "run", ours)
    assert patch.active and cls().run() == "jitguard"
    if replaced_later_by is not None:
        cls.run = replaced_later_by
    patch.restore()
    try:
        assert not patch.active
        assert cls().run() == after_restore
        if replaced_later_by is None:
            assert dict(cls.__dict__) == defined_before
    finally:
        if replaced_later_by is not None:
            cls.run = TRITONS_RUN  # type: ignore[method-assign]
