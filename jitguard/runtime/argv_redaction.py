"""Redaction of secrets in a process's argv before it is written to a log or a report (pure).

Secrets are found by the flag that carries them and by their own shape:

    >>> redact_argv(["serve", "--api-key", "sk-1", "--db", "postgres://u:pw@h/db", "HF_TOKEN=hf_x"])
    ['serve', '--api-key', '***', '--db', 'postgres://u:***@h/db', 'HF_TOKEN=***']

- a flag whose name has a secret word (`--hf-token X`, `--password=X`, `--jwt X`, `-p X`, and
  under a MySQL or MariaDB client the attached `-pSECRET`; but pytest's `-p no:NAME` /
  `-p pkg.plugin` names a plugin, so under `pytest` or `python -m pytest` a `-p` value shaped
  like a plugin name is kept); a word
  such as "tokens" in `--max-num-batched-tokens 8192` or "tokenizer" is not one, a count word
  (max, num, budget...) or a place word (file, path, url...) beside it makes the flag harmless, and a
  boolean flag (`--disable-auth`) or a next token that is itself a flag is never taken as a value;
- credentials in URLs (`scheme://user:PASS@host`), HTTP headers (`Authorization: Bearer X`,
  `Cookie: ...`), `NAME=VALUE` with a secret-looking NAME, secret keys inside JSON arguments;
- well-known token formats wherever they appear (`hf_...`, `sk-...`, `ghp_...`, JWTs).
"""

from __future__ import annotations

import json
import re
from typing import Any

MASK = "***"

# Words that make a name secret. Whole words only: "tokens" and "tokenizer" are not "token".
_SECRET_WORDS = frozenset({
    "token", "secret", "password", "passwd", "passphrase", "pass", "pw", "pwd", "key", "apikey", "credential",
    "credentials", "auth", "authorization", "bearer", "jwt", "cookie", "sas", "signature", "private",
    "session", "sessionid", "sig",  # sig: a URL's shared-access signature (?sig=...)
})
# A secret word beside one of these names something that is not itself a secret.
_HARMLESS_WORDS = frozenset({
    # counts and sizes: --max-tokens-per-step, --token-budget, --num-key-value-heads
    "max", "min", "num", "count", "budget", "limit", "size", "len", "length", "per", "batch", "batched", "heads",
    # where a secret lives, or how it is checked: --token-file, --auth-url, --auth-type
    "file", "path", "dir", "url", "uri", "host", "port", "type", "mode", "method", "algorithm", "header",
    "name", "env", "id", "cache", "version", "jar",  # --sas-version 1, --cookie-jar FILE
})
# A flag with one of these words switches something on or off and takes no value.
_BOOLEAN_WORDS = frozenset({"disable", "enable", "no", "skip", "use", "allow", "require", "trust", "insecure",
                            "verify", "without", "with"})
# Single-letter flags that carry a password in common tools (mysql -p, sshpass -p).
_SECRET_SHORT_FLAGS = frozenset({"p"})
# MySQL and MariaDB clients take the password attached (`-pSECRET`); elsewhere `-pXYZ` is often not one.
_ATTACHED_PASSWORD_PROGRAMS = frozenset({
    "mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlslap", "mysqlpump",
    "mysqlbinlog", "mariadb", "mariadb-dump", "mariadb-admin", "mariadb-import", "mariadb-show", "mariadb-check",
    "mariadb-slap", "mariadb-binlog"})
# pytest's `-p` loads (or with `no:`, blocks) a plugin: a module path or a registered plugin name.
_PYTEST_PLUGIN = re.compile(r"no:[\w.-]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_PYTEST_PROGRAMS = frozenset({"pytest", "py.test", "pytest.exe", "py.test.exe"})
_PYTHON_PROGRAM = re.compile(r"python[\d.]*w?(?:\.exe)?")
# Interpreter options that take a value, so `python -X dev -m pytest` still finds `-m pytest`.
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-X", "-W", "--check-hash-based-pycs"})

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@\s:?#]*)(?::(?P<password>[^/@\s?#]*))?@")
_URL_QUERY_PAIR = re.compile(r"(?P<sep>[?&;#])(?P<name>[^=&#;\s]+)=(?P<value>[^&#;\s]*)")
_HEADER = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_-]*)\s*:\s*(?P<value>.+)$", re.DOTALL)
_SCHEME_VALUE = re.compile(r"^(?P<scheme>Bearer|Basic|Token|Digest|Negotiate|Bot)\s+\S", re.IGNORECASE)
# A credential on its own ("Bearer abc.def"): one word after the scheme, so prose ("Basic usage") stays.
_SCHEME_CREDENTIAL = re.compile(r"^(?P<scheme>Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}$", re.IGNORECASE)
_NAME_VALUE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)=(?P<value>.*)$", re.DOTALL)
_QUOTED_PAIR = re.compile(
    r"""(?P<q>["'])(?P<name>[^"']+)(?P=q)(?P<sep>\s*:\s*)"""
    r"""(?P<vq>["'])(?P<value>(?:\\.|(?!(?P=vq)).)*)(?P=vq)"""
)
_KNOWN_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})")


def _name_words(name: str) -> list[str]:
    """'--hf-token' -> ['hf', 'token']; 'HF_TOKEN' -> ['hf', 'token']; 'apiKey' -> ['api', 'key']."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.lstrip("-"))
    return [word for word in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if word]


def is_secret_name(name: str) -> bool:
    """True when a flag, variable or key name says its value is a secret ('--api-key', 'HF_TOKEN')."""
    words = _name_words(name)
    if not any(word in _SECRET_WORDS for word in words):
        return False
    return not any(word in _HARMLESS_WORDS for word in words)


def _is_boolean_flag(name: str) -> bool:
    return any(word in _BOOLEAN_WORDS for word in _name_words(name))


def _redact_json(value: Any) -> tuple[Any, bool]:
    """`value` with every secret-named key's value masked; and whether anything was masked."""
    if isinstance(value, dict):
        changed = False
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_name(key) and not isinstance(item, (dict, list, bool)) \
                    and item is not None:
                out[key] = MASK
                changed = True
            else:
                out[key], inner = _redact_json(item)
                changed = changed or inner
        return out, changed
    if isinstance(value, list):
        items = [_redact_json(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, str):
        redacted = redact_text(value)
        return redacted, redacted != value
    return value, False


def _redact_structured(text: str) -> str:
    """JSON (or dict-like) text with the values of secret keys masked; other text unchanged."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            redacted, changed = _redact_json(parsed)
            return json.dumps(redacted, ensure_ascii=False) if changed else text

    def mask_pair(match: re.Match) -> str:
        if not is_secret_name(match["name"]):
            return match.group(0)
        return f"{match['q']}{match['name']}{match['q']}{match['sep']}{match['vq']}{MASK}{match['vq']}"

    return _QUOTED_PAIR.sub(mask_pair, text)


def redact_text(text: str) -> str:
    """One argument with secrets found by shape masked: URL credentials, secret query parameters,
    credential headers, NAME=VALUE with a secret NAME, secret keys in JSON, known token formats."""
    header = _HEADER.match(text)
    if header and is_secret_name(header["name"]):  # Authorization, Cookie, X-Api-Key, ...
        scheme = _SCHEME_VALUE.match(header["value"])
        kept = f"{scheme['scheme']} " if scheme else ""
        return f"{header['name']}: {kept}{MASK}"
    scheme = _SCHEME_CREDENTIAL.match(text)
    if scheme:
        return f"{scheme['scheme']} {MASK}"
    pair = _NAME_VALUE.match(text)
    if pair and is_secret_name(pair["name"]) and pair["value"]:
        return f"{pair['name']}={MASK}"
    text = _redact_structured(text)

    def mask_userinfo(match: re.Match) -> str:
        if match["password"] is not None:
            return f"{match['scheme']}{match['user']}:{MASK}@"
        return f"{match['scheme']}{MASK}@"

    text = _URL_USERINFO.sub(mask_userinfo, text)
    if "://" in text or text.startswith("?"):
        text = _URL_QUERY_PAIR.sub(
            lambda m: f"{m['sep']}{m['name']}={MASK}" if is_secret_name(m["name"]) and m["value"] else m.group(0), text)
    return _KNOWN_TOKENS.sub(MASK, text)


def _is_flag(arg: str) -> bool:
    # "-" alone is stdin and "-5" a number, not flags.
    return arg.startswith("-") and len(arg) > 1 and not re.fullmatch(r"-\d+(\.\d+)?", arg)


def _program_name(program: str) -> str:
    """The file name of argv[0] ('/venv/bin/pytest' -> 'pytest'; 'C:\\bin\\mysql.exe' -> 'mysql.exe')."""
    return program.replace("\\", "/").rsplit("/", 1)[-1]


def _pytest_arguments_start(argv: list[str]) -> int | None:
    """Where pytest's own arguments begin when argv runs pytest, else None.

    The program is pytest when argv[0] is the `pytest` script or pytest's `__main__.py` (what
    sys.argv holds under `python -m pytest`), or when the interpreter is given `-m pytest` (also
    the `-m pytest ...` form of sys.orig_argv without the interpreter).
    """
    if not argv:
        return None
    program = argv[0].replace("\\", "/")
    if _program_name(program) in _PYTEST_PROGRAMS or program.endswith("pytest/__main__.py"):
        return 1
    if program != "-m" and not _PYTHON_PROGRAM.fullmatch(_program_name(program)):
        return None  # another program's `-m pytest` is no proof that its `-p` names a plugin
    index = 0 if program == "-m" else 1
    while index < len(argv):
        arg = argv[index]
        if arg == "-m":
            return index + 2 if argv[index + 1:index + 2] == ["pytest"] else None
        if not _is_flag(arg) or arg.startswith("-c"):  # a script or `-c CODE` runs before any `-m`
            return None
        index += 2 if arg in _PYTHON_OPTIONS_WITH_VALUE else 1
    return None


def _takes_attached_password(argv: list[str]) -> bool:
    """Whether argv runs a MySQL or MariaDB client, whose `-pSECRET` is the password itself."""
    return bool(argv) and _program_name(argv[0]).removesuffix(".exe") in _ATTACHED_PASSWORD_PROGRAMS


def redact_argv(argv: list[str]) -> list[str]:
    """argv with secrets replaced by '***' (see the module docstring for what counts as one)."""
    out: list[str] = []
    pytest_from = _pytest_arguments_start(argv)
    attached_password = _takes_attached_password(argv)
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if not _is_flag(arg) or arg == "--":
            out.append(redact_text(arg))
            continue
        if attached_password and len(arg) > 2 and arg.startswith("-p") and not arg.startswith("-p="):
            out.append(f"-p{MASK}")
            continue
        flag, eq, value = arg.partition("=")
        name = flag.lstrip("-")
        single_dash = not flag.startswith("--")
        if single_dash and name in _SECRET_SHORT_FLAGS:
            plugin = value if eq else argv[index] if index < len(argv) else ""
            takes_secret = not (name == "p" and pytest_from is not None and index > pytest_from
                                and _PYTEST_PLUGIN.fullmatch(plugin) is not None)
        else:  # --long-flag, or a Go-style -long-flag
            takes_secret = is_secret_name(name) and not _is_boolean_flag(name)
        if eq:
            out.append(f"{flag}={MASK}" if takes_secret and value else f"{flag}={redact_text(value)}")
            continue
        out.append(arg)
        if takes_secret and index < len(argv) and not _is_flag(argv[index]):
            out.append(MASK)
            index += 1
    return out
