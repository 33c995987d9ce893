"""Tiny Triton kernels used by the foundation tests: one per recompile cause."""

import triton
import triton.language as tl


@triton.jit
def add_one_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit(do_not_specialize=["n"])
def add_one_dns_name(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit(do_not_specialize=[2])
def add_one_dns_index(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit(do_not_specialize=["nn"])
def add_one_misspelled(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit(do_not_specialize_on_alignment=["n"])
def add_one_dnsa(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit(do_not_specialize=["n"])
def add_one_int64(x_ptr, y_ptr, n: tl.int64, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


def make_autotuned_kernel():
    """An autotuned kernel. Built on demand: Triton 3.2's autotune asks the active driver for its
    benchmarker at decoration time, so it must be decorated while the offline backend is active."""
    global add_one_autotuned
    if add_one_autotuned is None:

        @triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2),
                                  triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
        @triton.jit
        def add_one_autotuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)

        add_one_autotuned = add_one_autotuned_kernel
    return add_one_autotuned


add_one_autotuned = None


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit(do_not_specialize=["n"])
def add_one_heuristic(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit
def sum_rows_kernel(x_ptr, out_ptr, num_rows, BLOCK: tl.constexpr):
    """`num_rows` only bounds a loop: demoting it changes no generated code (a free demotion)."""
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(num_rows):
        acc += tl.load(x_ptr + row * BLOCK + cols)
    tl.store(out_ptr + cols, acc)


@triton.jit
def scale_elements_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    """`n_elements` bounds a mask over contiguous offsets: with BLOCK = 1024 (8 elements a thread),
    `n_elements % 16 == 0` gives 128-bit accesses, so demoting it is costly."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)
