"""`jitguard scan` rules, on small kernels written the ways real projects write them."""

from __future__ import annotations

import textwrap

from jitguard.codemod.scan import scan_source


def _scan(text: str) -> list[tuple[str, str | None]]:
    findings, _ = scan_source(textwrap.dedent(text).lstrip("\n").encode(), "k.py")
    return [(finding.rule, finding.param) for finding in findings]


MOE_LIKE = """
    import triton
    import triton.language as tl

    @triton.jit
    def moe(a_ptr, b_ptr, c_ptr, sorted_token_ids_ptr, N, K, EM, num_valid_tokens,
            stride_am, stride_bk, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        pid = tl.program_id(0)
        num_pid_m = tl.cdiv(EM, BLOCK_M)
        offs = tl.load(sorted_token_ids_ptr + pid * BLOCK_M + tl.arange(0, BLOCK_M))
        token_mask = offs < num_valid_tokens
        for k in range(0, tl.cdiv(K, 64)):
            pass
        offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(c_ptr + offs_n, 0.0, mask=(offs_n < N) & token_mask)
"""


def test_token_counts_are_warned_and_model_dims_are_info() -> None:
    found = _scan(MOE_LIKE)
    assert ("JG101", "EM") in found
    assert ("JG101", "num_valid_tokens") in found
    assert ("JG102", "N") in found and ("JG102", "K") in found
    # pointers and constexprs are never "specialized ints"
    assert not [param for rule, param in found if param and param.endswith("_ptr")]
    assert not [param for rule, param in found if param in ("BLOCK_M", "BLOCK_N")]


def test_demoted_token_counts_are_quiet_and_weight_strides_are_not_flagged() -> None:
    found = _scan(MOE_LIKE.replace("@triton.jit\n", '@triton.jit(do_not_specialize=["EM", "num_valid_tokens"])\n'))
    assert not [rule for rule, _ in found if rule in ("JG101", "JG106", "JG107")]


def test_constexpr_token_count_and_bad_demotion_lists() -> None:
    found = _scan("""
        import triton
        import triton.language as tl
        @triton.jit(do_not_specialize=["n_tokens", "BLOCK", 7], do_not_specialize_on_alignment=["x_ptr"])
        def k(x_ptr, num_tokens: tl.constexpr, BLOCK: tl.constexpr):
            pass
    """)
    assert ("JG103", "num_tokens") in found
    assert ("JG104", "n_tokens") in found  # misspelled: Triton ignores it silently
    assert ("JG104", None) in found  # index 7 of 3 parameters
    assert ("JG105", "BLOCK") in found
    assert ("JG103", "BLOCK") not in found


def test_misspelling_message_suggests_the_parameter() -> None:
    findings, _ = scan_source(
        b'import triton\n@triton.jit(do_not_specialize=["num_token"])\ndef k(x_ptr, num_tokens):\n    pass\n', "k.py"
    )
    messages = [f.message for f in findings if f.rule == "JG104"]
    assert messages and "did you mean `num_tokens`" in messages[0]


def test_device_helpers_called_by_kernels_are_not_flagged() -> None:
    found = _scan("""
        import triton
        @triton.jit
        def helper(x_ptr, num_tokens):
            return num_tokens
        @triton.jit(do_not_specialize=["num_tokens"])
        def kernel(x_ptr, num_tokens):
            helper(x_ptr, num_tokens)
    """)
    assert found == []


def test_ignore_comments_silence_one_rule_or_all() -> None:
    found = _scan("""
        import triton
        @triton.jit
        def k(x_ptr,
              num_tokens,  # jitguard: ignore[JG101]
              batch_size,  # jitguard: ignore
              seq_len):  # jitguard: ignore[JG102]
            pass
    """)
    assert found == [("JG101", "seq_len")]


def test_pointer_named_like_a_count_is_not_an_int() -> None:
    found = _scan("""
        import triton
        @triton.jit
        def k(seq_lens, out_ptr, i):
            n = tl.load(seq_lens + i)
            tl.store(out_ptr, n)
    """)
    assert ("JG101", "seq_lens") not in found


def test_non_triton_jit_functions_are_ignored() -> None:
    source = textwrap.dedent("""
        from numba import jit
        @jit
        def k(x, num_tokens):
            return x
    """).encode()
    assert scan_source(source, "k.py") == ([], 0)


def test_scan_help_lists_every_rule() -> None:
    from jitguard.codemod.commands import scan_command
    from jitguard.codemod.scan import RULES

    for rule in RULES.values():
        assert f"{rule.id} {rule.name}" in (scan_command.help or "")
