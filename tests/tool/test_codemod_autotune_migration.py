"""`jitguard fix --bucket` (and `--from REPORT` with an `autotune` entry) migrates an autotune keyed on a
token count to `jitguard.autotune(..., bucket=...)`: only the autotune call changes, plus
`import jitguard` when missing; a second run changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import fix_command

TAIL = "@triton.jit\ndef rows(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr):\n    pass\n"
IMPORTS = "import triton\nimport triton.language as tl\n"


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# (id, --bucket, before, after)
CASES = [
    ("one-line", "rows:num_tokens",
     IMPORTS + '\n@triton.autotune(configs=CONFIGS, key=["num_tokens", "hidden"])\n' + TAIL,
     IMPORTS + 'import jitguard\n\n@jitguard.autotune(configs=CONFIGS, key=["num_tokens", "hidden"], '
     'bucket={"num_tokens": "pow2"})\n' + TAIL),
    ("multi-line-single-quotes-comment", "rows:num_tokens",
     IMPORTS + _src("""
        @triton.autotune(
            configs=[triton.Config({'BLOCK': 64})],
            key=['num_tokens', 'hidden'],  # re-tunes per count
            warmup=5,
        )
        """) + TAIL,
     IMPORTS + "import jitguard\n" + _src("""
        @jitguard.autotune(
            configs=[triton.Config({'BLOCK': 64})],
            key=['num_tokens', 'hidden'],  # re-tunes per count
            bucket={'num_tokens': 'pow2'},
            warmup=5,
        )
        """) + TAIL),
    ("multi-line-key-last", "rows:num_tokens=align:16",
     IMPORTS + "\n@triton.autotune(\n    configs=CONFIGS,\n    key=['num_tokens'],\n)\n" + TAIL,
     IMPORTS + "import jitguard\n\n@jitguard.autotune(\n    configs=CONFIGS,\n    key=['num_tokens'],\n"
     "    bucket={'num_tokens': 'align:16'},\n)\n" + TAIL),
    ("from-triton-import-autotune", "rows:num_tokens=le:[1,2,4,8]",
     IMPORTS + "from triton import autotune\n\n@autotune(CONFIGS, key=['num_tokens'])\n" + TAIL,
     IMPORTS + "from triton import autotune\nimport jitguard\n\n"
     "@jitguard.autotune(CONFIGS, key=['num_tokens'], bucket={'num_tokens': 'le:[1,2,4,8]'})\n" + TAIL),
    ("module-alias-positional-key", "rows:num_tokens",
     "import triton as tr\nimport triton.language as tl\n\n@tr.autotune(CONFIGS, ['num_tokens'])\n"
     + TAIL.replace("@triton.jit", "@tr.jit"),
     "import triton as tr\nimport triton.language as tl\nimport jitguard\n\n"
     "@jitguard.autotune(CONFIGS, ['num_tokens'], bucket={'num_tokens': 'pow2'})\n"
     + TAIL.replace("@triton.jit", "@tr.jit")),
    ("jitguard-already-merge", "rows:num_tokens",
     "import jitguard\n" + IMPORTS + '\n@jitguard.autotune(configs=C, key=["hidden", "num_tokens"], '
     'bucket={"hidden": "align:64"})\n' + TAIL,
     "import jitguard\n" + IMPORTS + '\n@jitguard.autotune(configs=C, key=["hidden", "num_tokens"], '
     'bucket={"hidden": "align:64", "num_tokens": "pow2"})\n' + TAIL),
    ("from-jitguard-import-autotune", "rows:num_tokens",
     IMPORTS + "from jitguard import autotune\n\n@autotune(configs=C, key=['num_tokens'])\n" + TAIL,
     IMPORTS + "from jitguard import autotune\n\n"
     "@autotune(configs=C, key=['num_tokens'], bucket={'num_tokens': 'pow2'})\n" + TAIL),
    ("jitguard-alias-no-bucket", "rows:num_tokens",
     "import jitguard as jg\n" + IMPORTS + "\n@jg.autotune(configs=C, key=['num_tokens'])\n" + TAIL,
     "import jitguard as jg\n" + IMPORTS
     + "\n@jg.autotune(configs=C, key=['num_tokens'], bucket={'num_tokens': 'pow2'})\n" + TAIL),
    ("multi-line-bucket-merge", "rows:num_tokens",
     "import jitguard\n" + IMPORTS + "\n@jitguard.autotune(\n    configs=C,\n    key=['hidden', 'num_tokens'],\n"
     "    bucket={\n        'hidden': 'align:64',\n    },\n)\n" + TAIL,
     "import jitguard\n" + IMPORTS + "\n@jitguard.autotune(\n    configs=C,\n    key=['hidden', 'num_tokens'],\n"
     "    bucket={\n        'hidden': 'align:64',\n        'num_tokens': 'pow2',\n    },\n)\n" + TAIL),
    ("crlf-call-form", "rows:num_tokens",
     (IMPORTS + "\ndef _rows(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr):\n    pass\n\n"
      "rows = triton.autotune(configs=C, key=['num_tokens'])(triton.jit(_rows))\n").replace("\n", "\r\n"),
     (IMPORTS + "import jitguard\n\ndef _rows(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr):\n    pass\n\n"
      "rows = jitguard.autotune(configs=C, key=['num_tokens'], bucket={'num_tokens': 'pow2'})(triton.jit(_rows))\n"
      ).replace("\n", "\r\n")),
]


@pytest.mark.parametrize("bucket, before, after", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bucket_migrates_the_autotune_call(tmp_path: Path, bucket: str, before: str, after: str) -> None:
    target = tmp_path / "ops.py"
    target.write_bytes(before.encode())
    result = CliRunner().invoke(fix_command, ["--bucket", bucket, str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes().decode() == after
    compile(after, str(target), "exec")
    assert "autotune -> jitguard.autotune, bucket += num_tokens" in result.stdout
    again = CliRunner().invoke(fix_command, ["--check", "--bucket", bucket, str(target)])
    assert again.exit_code == 0 and "Nothing to fix" in again.stderr, again.output  # idempotent
    assert target.read_bytes().decode() == after


# (id, --bucket, source, error expected)
ERRORS = [
    ("not-autotuned", "rows:num_tokens", IMPORTS + "\n" + TAIL, "has no autotune(...) around it"),
    ("not-in-key", "rows:hidden", IMPORTS + "\n@triton.autotune(configs=C, key=['num_tokens'])\n" + TAIL,
     "`hidden` is not in its autotune key (num_tokens)"),
    ("bucket-not-literal", "rows:num_tokens",
     "import jitguard\n" + IMPORTS + "\n@jitguard.autotune(configs=C, key=['num_tokens', 'hidden'], bucket=B)\n" + TAIL,
     "its bucket= is not a literal dict"),
]


@pytest.mark.parametrize("bucket, source, said", [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS])
def test_bucket_that_cannot_be_written_is_one_error_and_no_edit(
    tmp_path: Path, bucket: str, source: str, said: str
) -> None:
    target = tmp_path / "ops.py"
    target.write_text(source)
    result = CliRunner().invoke(fix_command, ["--bucket", bucket, str(target)])
    # a bucket= dict a person must edit is a finding left (1); asking for a kernel or key that is not there, bad input
    assert result.exit_code == (1 if "not a literal" in said else 2), result.output
    assert target.read_text() == source
    assert said in result.stderr


@pytest.mark.parametrize("text", ["rows", "rows:num_tokens=cube", "rows:num_tokens=align:0"])
def test_bad_bucket_option_is_a_usage_error(tmp_path: Path, text: str) -> None:
    target = tmp_path / "ops.py"
    target.write_text(IMPORTS + "\n@triton.autotune(configs=C, key=['num_tokens'])\n" + TAIL)
    result = CliRunner().invoke(fix_command, ["--bucket", text, str(target)])
    assert result.exit_code == 2 and f"--bucket {text!r}" in result.output


def test_bucket_and_demotion_on_one_kernel(tmp_path: Path) -> None:
    target = tmp_path / "ops.py"
    target.write_text(IMPORTS + "\n@triton.autotune(configs=C, key=['num_tokens'])\n" + TAIL)
    result = CliRunner().invoke(fix_command, ["--bucket", "rows:num_tokens", "--param", "rows:hidden", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text() == (IMPORTS + "import jitguard\n\n@jitguard.autotune(configs=C, key=['num_tokens'], "
                                  "bucket={'num_tokens': 'pow2'})\n" + TAIL.replace(
                                      "@triton.jit", "@triton.jit(do_not_specialize=['hidden'])"))  # the file's quote


def test_report_autotune_entry_drives_the_migration(tmp_path: Path) -> None:
    """The report's `autotune` entry (num_tokens took 1..9: 9 tunings, 5 with pow2 buckets) picks the
    key to bucket; `hidden` stayed 4096, so it is left alone."""
    target = tmp_path / "ops.py"
    before = IMPORTS + '\n@triton.autotune(configs=C, key=["num_tokens", "hidden"])\n' + TAIL
    target.write_text(before)
    keys = [{"num_tokens": n, "hidden": 4096} for n in range(1, 10)]
    report = {"processes": [], "kernels": [{
        "name": "rows", "module": "ops", "file": str(target), "line": 5, "params": {},
        "autotune": {"key": ["num_tokens", "hidden"], "tunings": 9, "tunings_during_serving": 9, "configs_timed": 18,
                     "tuning_s": 1.0, "key_params_varying": ["num_tokens"], "keys_tuned": keys},
    }]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    held = CliRunner().invoke(fix_command, ["--from", str(tmp_path / "report.json"), str(target)])
    assert held.exit_code == 0 and target.read_text() == before, held.output
    assert ("skipped: rows:num_tokens: bucketing the autotune key rewrites triton.autotune as jitguard.autotune: "
            "the module then imports jitguard at run time" in held.stderr)
    assert "--allow-jitguard-import applies it" in held.stderr
    result = CliRunner().invoke(fix_command, ["--from", str(tmp_path / "report.json"), "--allow-jitguard-import",
                                              str(target)])
    assert result.exit_code == 0, result.output
    assert "its own users need jitguard installed" in result.stderr
    assert target.read_text() == before.replace(
        '@triton.autotune(configs=C, key=["num_tokens", "hidden"])',
        '@jitguard.autotune(configs=C, key=["num_tokens", "hidden"], bucket={"num_tokens": "pow2"})',
    ).replace(IMPORTS, IMPORTS + "import jitguard\n")


def test_migration_runs_without_the_decorator_rewrite() -> None:
    """The migration and `fix` share their append edits through jitguard.codemod.sequence_edits, so
    the migration neither imports `fix` (which imports it: a circle) nor reaches into its privates."""
    code = textwrap.dedent("""
        import sys
        import libcst as cst
        from jitguard.codemod.autotune_migration import migrate_autotune
        calls = ['triton.autotune(configs=C, key=["n", "d"])',
                 'jitguard.autotune(configs=C, key=["n", "d"], bucket={"n": "pow2"})']
        for text in calls:
            print(cst.Module([]).code_for_node(migrate_autotune(cst.parse_expression(text), {"d": "pow2"}, '"')))
        print('jitguard.codemod.fix' in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        'jitguard.autotune(configs=C, key=["n", "d"], bucket={"d": "pow2"})',
        'jitguard.autotune(configs=C, key=["n", "d"], bucket={"n": "pow2", "d": "pow2"})',
        "False",
    ]
