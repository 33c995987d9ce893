"""Redaction of secrets in a process's argv before it is written to a log or a report (pure)."""

from __future__ import annotations

_SECRET_WORDS = ("token", "secret", "password", "passwd", "key", "credential", "auth")


def redact_argv(argv: list[str]) -> list[str]:
    """argv with the values of secret-looking flags (--api-key X, --hf-token=X) replaced by '***'."""
    out: list[str] = []
    redact_next = False
    for arg in argv:
        if redact_next:
            out.append("***")
            redact_next = False
            continue
        if arg.startswith("-"):
            flag, eq, _ = arg.partition("=")
            if any(word in flag.lower() for word in _SECRET_WORDS):
                if eq:
                    out.append(f"{flag}=***")
                else:
                    out.append(arg)
                    redact_next = True
                continue
        out.append(arg)
    return out
