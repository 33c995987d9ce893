"""Secrets in argv are masked by flag and by shape; harmless values (counts, model names) are kept."""

from __future__ import annotations

import pytest

from jitguard.runtime.argv_redaction import redact_argv

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

# (argv after the program name, what the log must show)
MASKED = [
    (["--api-key", "sk-1"], ["--api-key", "***"]),
    (["--hf-token=abc"], ["--hf-token=***"]),
    (["--password", "p"], ["--password", "***"]),
    (["--pass", "p"], ["--pass", "***"]),
    (["--pw", "p"], ["--pw", "***"]),
    (["--bearer", "b"], ["--bearer", "***"]),
    (["--jwt", "j"], ["--jwt", "***"]),
    (["--cookie", "c=1"], ["--cookie", "***"]),
    (["--sas", "sv=2020&sig=x"], ["--sas", "***"]),
    (["--sas-token=sv=1"], ["--sas-token=***"]),
    (["--client-secret", "s"], ["--client-secret", "***"]),
    (["--aws_secret_access_key", "s"], ["--aws_secret_access_key", "***"]),
    (["--apiKey", "k"], ["--apiKey", "***"]),
    (["-token", "t"], ["-token", "***"]),
    (["-p", "hunter2"], ["-p", "***"]),
    (["--db", "postgres://u:PASS@h/db"], ["--db", "postgres://u:***@h/db"]),
    (["--url=https://user:TOKEN@host/repo.git"], ["--url=https://user:***@host/repo.git"]),
    (["https://TOKEN@github.com/org/repo"], ["https://***@github.com/org/repo"]),
    (["redis://:secret@cache:6379/0"], ["redis://:***@cache:6379/0"]),
    (["https://h/x?token=abc&n=1"], ["https://h/x?token=***&n=1"]),
    (["https://h/x?page=1&api_key=abc"], ["https://h/x?page=1&api_key=***"]),
    (["https://acct.blob.core/c/b?sv=2024&sig=SECRET"], ["https://acct.blob.core/c/b?sv=2024&sig=***"]),  # Azure SAS
    (["https://h/cb#access_token=SECRET&state=1"], ["https://h/cb#access_token=***&state=1"]),  # OAuth fragment
    (["-H", "Authorization: Bearer X"], ["-H", "Authorization: Bearer ***"]),
    (["--header", "Authorization: Basic dXNlcjpwdw=="], ["--header", "Authorization: Basic ***"]),
    (["--header=Authorization: Bearer X"], ["--header=Authorization: Bearer ***"]),
    (["-H", "Cookie: session=abc"], ["-H", "Cookie: ***"]),
    (["-H", "X-Api-Key: abc"], ["-H", "X-Api-Key: ***"]),
    (["Bearer abc.def.ghi"], ["Bearer ***"]),
    (["HF_TOKEN=X"], ["HF_TOKEN=***"]),
    (["env", "OPENAI_API_KEY=sk-x", "python"], ["env", "OPENAI_API_KEY=***", "python"]),
    (["-e", "DB_PASSWORD=x"], ["-e", "DB_PASSWORD=***"]),
    (["--config", '{"api_key": "abc", "n": 3}'], ["--config", '{"api_key": "***", "n": 3}']),
    (["--hf-overrides={\"auth\": {\"token\": \"t\"}}"], ["--hf-overrides={\"auth\": {\"token\": \"***\"}}"]),
    (["--cfg", "{'password': 'x', 'user': 'u'}"], ["--cfg", "{'password': '***', 'user': 'u'}"]),
    (["--model", "hf_abcdefghijklmnopqrstuvwxyz"], ["--model", "***"]),
    (["--note", "ghp_abcdefghijklmnopqrstuvwxyz0123"], ["--note", "***"]),
    (["--id-token-value", JWT], ["--id-token-value", "***"]),
    (["--x", JWT], ["--x", "***"]),
]

KEPT = [
    ["--max-num-batched-tokens", "8192"],
    ["--cookie-jar", "/tmp/cookies.txt"],
    ["--sas-version", "2024-05-04"],
    ["--max-tokens", "128"],
    ["--num-tokens=64"],
    ["--token-budget", "512"],
    ["--tokenizer", "meta-llama/Llama-3-8B"],
    ["--tokenizer-mode", "auto"],
    ["--num-key-value-heads", "8"],
    ["--disable-auth", "--port", "8000"],
    ["--use-auth-token", "--model", "m"],
    ["--trust-remote-code", "serve.py"],
    ["--api-key", "--port", "8000"],  # a missing value: the next flag is not swallowed
    ["--token-file", "/run/secrets/hf"],
    ["--ssl-keyfile", "/etc/key.pem"],
    ["--auth-url", "https://login.example.com"],
    ["--model", "Qwen/Qwen3-30B-A3B", "--tensor-parallel-size", "2"],
    ["https://huggingface.co/org/model"],
    ["https://h/x?max_tokens=5&page=2"],
    ["MAX_TOKENS=100"],
    ["-H", "Content-Type: application/json"],
    ["--config", '{"max_tokens": 5, "model": "m"}'],
    ["--passes", "3"],
    ["-m", "vllm.entrypoints.openai.api_server"],
    ["--", "--api-key"],
    ["-", "-5"],
    ["--prompt", "Basic usage: the token limit is 5"],
    ["--pin-memory", "true"],
    ["localhost:8000"],
]


# `-p` is a password for mysql-like tools and a plugin for pytest: whole argv, program first, as a
# process records it (sys.argv of the `pytest` script, of `python -m pytest`, or sys.orig_argv's tail).
PYTEST_PLUGINS_KEPT = [
    ["pytest", "-p", "no:cacheprovider"],
    ["/venv/bin/pytest", "-q", "-p", "no:cacheprovider", "tests/tool"],
    ["/venv/bin/py.test", "-p", "xdist.plugin"],
    ["/venv/lib/python3.11/site-packages/pytest/__main__.py", "-p", "no:randomly", "-x"],
    ["C:\\venv\\Scripts\\pytest.exe", "-p", "no:cacheprovider"],
    ["python", "-m", "pytest", "-p", "no:cacheprovider"],
    ["/usr/bin/python3.11", "-X", "dev", "-u", "-m", "pytest", "-p", "pytest_timeout", "-p", "no:pytest-randomly"],
    ["-m", "pytest", "-p", "no:cacheprovider"],
    ["pytest", "-p=no:cacheprovider"],
    ["pytest", "-p", "jitguard.guard.pytest_plugin", "-p", "no:jitguard"],
]

# (whole argv, what the log must show): `-p` stays a password wherever it is not pytest's plugin flag.
PASSWORD_P_MASKED = [
    (["mysql", "-u", "root", "-p", "hunter2"], ["mysql", "-u", "root", "-p", "***"]),
    (["sshpass", "-p", "no:cacheprovider", "ssh", "h"], ["sshpass", "-p", "***", "ssh", "h"]),  # not pytest
    (["python", "-m", "vllm.entrypoints.cli", "-p", "hunter2"], ["python", "-m", "vllm.entrypoints.cli", "-p", "***"]),
    (["python", "tool.py", "-m", "pytest", "-p", "hunter2"], ["python", "tool.py", "-m", "pytest", "-p", "***"]),
    (["python", "-c", "import x", "-m", "pytest", "-p", "s3cr3t"], ["python", "-c", "import x", "-m", "pytest", "-p",
                                                                     "***"]),
    (["client", "-m", "pytest", "-p", "hunter2"], ["client", "-m", "pytest", "-p", "***"]),  # not an interpreter
    (["pytest", "-p", "hunter 2!"], ["pytest", "-p", "***"]),  # not a plugin name: masked even under pytest
    (["pytest", "-p", "p@ss:word"], ["pytest", "-p", "***"]),
    (["pytest", "-p=pa$$word"], ["pytest", "-p=***"]),
    # pytest behind another program: the program is sshpass, so every `-p` is masked (never a leak)
    (["sshpass", "-p", "pw", "pytest", "-p", "no:x"], ["sshpass", "-p", "***", "pytest", "-p", "***"]),
    # MySQL and MariaDB clients take the password attached to -p
    (["mysql", "-uroot", "-phunter2", "db"], ["mysql", "-uroot", "-p***", "db"]),
    (["/usr/bin/mysqldump", "-h", "db.internal", "-pS3cr3t!", "--all-databases"],
     ["/usr/bin/mysqldump", "-h", "db.internal", "-p***", "--all-databases"]),
    (["mariadb", "-p=hunter2"], ["mariadb", "-p=***"]),
    (["C:\\mysql\\bin\\mysql.exe", "-pPa55"], ["C:\\mysql\\bin\\mysql.exe", "-p***"]),
    (["mysql", "-p"], ["mysql", "-p"]),  # -p alone prompts for it
]

# Elsewhere an attached `-pXYZ` is usually not a password (`-p8000` a port, `-pthreads`): kept.
ATTACHED_P_KEPT = [
    ["python", "-m", "http.server", "-p8000"],
    ["gcc", "-pthread", "x.c"],
    ["mkdir", "-pv", "out"],
    ["pytest", "-pno:cacheprovider"],
]


@pytest.mark.parametrize("argv", PYTEST_PLUGINS_KEPT, ids=[" ".join(a) for a in PYTEST_PLUGINS_KEPT])
def test_pytest_plugin_flags_are_kept(argv: list[str]) -> None:
    assert redact_argv(argv) == argv


@pytest.mark.parametrize("argv, shown", PASSWORD_P_MASKED, ids=[" ".join(a) for a, _ in PASSWORD_P_MASKED])
def test_p_stays_a_password_outside_pytest_plugin_flags(argv: list[str], shown: list[str]) -> None:
    assert redact_argv(argv) == shown


@pytest.mark.parametrize("argv", ATTACHED_P_KEPT, ids=[" ".join(a) for a in ATTACHED_P_KEPT])
def test_attached_p_is_kept_outside_mysql_clients(argv: list[str]) -> None:
    assert redact_argv(argv) == argv


def test_the_table_has_forty_cases_both_ways() -> None:
    assert len(MASKED) >= 20 and len(KEPT) >= 20 and len(MASKED) + len(KEPT) >= 40


@pytest.mark.parametrize("argv, shown", MASKED, ids=[" ".join(a) for a, _ in MASKED])
def test_secrets_are_masked(argv: list[str], shown: list[str]) -> None:
    assert redact_argv(["prog", *argv]) == ["prog", *shown]


@pytest.mark.parametrize("argv", KEPT, ids=[" ".join(a) for a in KEPT])
def test_harmless_values_are_kept(argv: list[str]) -> None:
    assert redact_argv(["prog", *argv]) == ["prog", *argv]


def test_nothing_secret_survives_anywhere_in_a_long_command() -> None:
    argv = ["vllm", "serve", "m", "--api-key", "S1", "--hf-token=S2", "-H", "Authorization: Bearer S3",
            "postgres://u:S4@h/db", "HF_TOKEN=S5", '{"api_key": "S6"}', "-p", "S7"]
    joined = " ".join(redact_argv(argv))
    assert not any(f"S{i}" in joined for i in range(1, 8)), joined
    assert len(redact_argv(argv)) == len(argv)
