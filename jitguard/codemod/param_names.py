"""What a parameter's name says about it, where the name is unambiguous: `scan` asks these first and
judges every other int by its uses (`param_uses`).

A token count (`num_tokens`, `seq_len`, `M`, `n_elements`) changes with every batch; a model
dimension (`hidden_size`, `head_dim`, `N`, `K`, `ngroups`) is fixed per model. Names that could be
either (`L`, `S`, `kv_len`, `chunk_size`, `block_size`, `num_blocks`) are *not* judged here: they
return False from both tests, and their uses decide.

    >>> is_token_count_name("num_tokens"), is_model_dimension_name("head_dim"), is_model_dimension_name("kv_len")
    (True, True, False)
"""

from __future__ import annotations

# Words (between underscores, lower-cased) that make an int parameter a token/batch count.
TOKEN_WORDS = frozenset(
    {"token", "tokens", "tok", "toks", "seq", "seqs", "seqlen", "seqlens", "req", "reqs", "request", "requests",
     "batch", "batches", "bs", "rows"}
)
# Words that make such a name an id, an index, a flag or a per-item constant, not a count.
NOT_A_COUNT_WORDS = frozenset(
    {"id", "ids", "idx", "indices", "index", "mask", "offs", "loc", "locs", "map", "mapping", "table", "data",
     "factor", "quant", "per", "has", "is", "use", "ptr", "ptrs", "scale", "stride",
     # a count the caller has already bucketed (`total_tokens_bucket`: rounded to a power of two) takes few values
     "bucket", "buckets", "bucketed", "bin", "bins", "binned"}
)
# Whole names that count tokens in GEMM/elementwise conventions.
TOKEN_NAMES = frozenset({"M", "EM", "T", "n_elements", "numel", "n_elem", "num_elements", "n_rows", "num_rows"})
# Single capital letters that name a model dimension in GEMM/attention conventions. Others (`L`, `S`,
# `B`) are judged by use.
MODEL_LETTERS = frozenset({"N", "K", "D", "H", "E", "V", "C", "G", "W", "F", "P", "R"})
# Words that make an int a model dimension (fixed per model or per server), whatever its uses. Words that
# name something either fixed or per-call (`kv`, `chunk`, `block`, `page`, `split`, `size`, `q`) are not here.
MODEL_WORDS = frozenset(
    {"hidden", "dim", "dims", "head", "heads", "hd", "vocab", "col", "cols", "ncols", "feature", "features",
     "channel", "channels", "chan", "chans", "group", "groups", "expert", "experts", "embed", "emb", "intermediate",
     "inter",
     "ffn", "width", "height", "rank", "topk", "window", "layer", "layers", "classes", "bits", "stages", "warps",
     "k", "d", "h", "w", "c", "g", "e", "v", "nheads", "headdim", "stride", "strides", "ld", "lda", "ldb", "ldc",
     "eps", "max", "cap", "capacity", "padding", "pad", "align", "alignment",
     # Mamba's head and state dimensions (`hdim`, `dstate`)
     "hdim", "dstate"}
)
# Tensor axes laid out outside the token axis ([B, T, ...], [G, T, X], [E, T, X]): their strides are T * inner.
OUTER_AXES = frozenset({"batch", "b", "z", "bs", "group", "groups", "g", "expert", "experts", "e", "split", "splits"})
# Axes that are the token axis itself: a stride along one proves the tensor has a token axis.
TOKEN_AXES = frozenset({"token", "tokens", "tok", "seq", "s", "t", "m", "row", "rows", "pos", "l"})


def words(name: str) -> list[str]:
    """The lower-cased words of a snake-case name."""
    return [word for word in name.lower().split("_") if word]


def is_token_count_name(name: str) -> bool:
    """True for names like `num_tokens`, `seq_len`, `EM`, `n_elements`, `batch_size` (not strides)."""
    found = words(name)
    if set(found) & NOT_A_COUNT_WORDS or name.lower().startswith("max_num") or name.endswith("ptr"):
        return False  # ids, masks, pointers, buffer capacities (max_num_reqs) are no per-call count
    return name in TOKEN_NAMES or any(word in TOKEN_WORDS for word in found)


def _model_word(word: str) -> bool:
    # `ngroups`, `nexperts`: a count of a model word is a model dimension too
    return word in MODEL_WORDS or (len(word) > 3 and word[0] == "n" and word[1:] in MODEL_WORDS)


def is_model_dimension_name(name: str) -> bool:
    """True for `hidden_size`, `head_dim`, `N`, `K`, `n_cols`, `num_experts`, `ngroups`: fixed per model.

    A single capital letter counts only when it is a GEMM/attention model letter (`N`, `K`, `D`, `H`);
    a lone `n`, `num`, `len`, and names of words that could be per-call (`kv_len`, `chunk_size`) do not.
    """
    if name in TOKEN_NAMES:
        return False
    if len(name) == 1:
        return name in MODEL_LETTERS or name.lower() in MODEL_WORDS
    meaningful = [word for word in words(name) if word not in ("n", "num")]
    return bool(meaningful) and any(_model_word(word) for word in meaningful)


def is_stride_name(name: str) -> bool:
    """True for `stride_xm`, `x_stride_t`, `stride`."""
    return "stride" in words(name) or name.lower().startswith("stride")


def stride_axis(name: str) -> tuple[str, str]:
    """(tensor, axis) of a stride name.

    `stride_am` -> (a, m), `q_stride_t` -> (q, t), `stride_x_group` -> (x, group).
    """
    found = [word for word in words(name) if word != "stride"]
    if not found:
        return "", ""
    if len(found) == 1:
        word = found[0]
        return (word[:-1], word[-1]) if len(word) == 2 else ("", word)
    return "_".join(found[:-1]), found[-1]
