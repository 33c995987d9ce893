"""Static side of jitguard: `scan` finds recompile risks in Triton kernel sources, `fix` rewrites
their `@triton.jit` decorators (`do_not_specialize`, `do_not_specialize_on_alignment`).

Modules: `kernels` (find kernels, ast), `scan` (rules), `fix` (rewrite one file, libcst),
`demotions` (`--param` / `--from` inputs), `fix_tree` (fix over many files), `files` (walk, read,
atomic write, parallel map), `commands` (the click commands).
"""
