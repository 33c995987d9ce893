"""Facts about one compiled Triton kernel, read from its generated code: what a demotion can cost.

`code_facts(ttir, ptx, resource_usage)` reads the width of every global load and store (bytes per
instruction, `ld.global.v4.b32` = 16), `cp.async` copies, tensor-core (`mma.sync`, `wgmma`) and TMA
(`cp.async.bulk.tensor`) instructions, the PTX instruction count, which arguments carry
`tt.divisibility = 16` in the TTIR, and the registers and local memory (spills) that `cuobjdump
-res-usage` reports for the cubin. `compare_facts(before, after)` says what got worse.

Pure text parsing: this module imports neither Triton nor torch.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

# `@%p1 ld.global.L1::evict_last.v4.b32 { ... }, [ %rd1 + 0 ];` -> opcode tokens after "ld.global"
_GLOBAL_ACCESS = re.compile(r"^\s*(?:@!?%p\w+\s+)?(ld|st)\.global((?:\.[\w:]+)*)\s")
# `cp.async.cg.shared.global [ %r1 + 0 ], [ %rd2 + 0 ], 0x10, %r3;` (not the bulk tensor form)
_ASYNC_COPY = re.compile(
    r"^\s*(?:@!?%p\w+\s+)?cp\.async\.c[ag]\.shared\.global(?:\.[\w:]+)*"
    r"\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)"
)
_TYPE_TOKEN = re.compile(r"^[bsuf](8|16|32|64|128)$")
_VECTOR_TOKEN = re.compile(r"^v(\d+)$")
_TTIR_FUNC = re.compile(r"tt\.func\s+(?:public\s+)?@[\w$.]+\((.*)\)\s*(?:attributes|\{|->)")
_TTIR_ARG = re.compile(r"%([\w$.]+)\s*:\s*[^{,]+?(\{[^}]*\})?\s*(?:loc\([^)]*(?:\([^)]*\))?[^)]*\))?\s*(?:,|$)")
_RESOURCE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


@dataclass(frozen=True)
class CodeFacts:
    """What one compiled variant does, as far as a demotion can change it.

    `loads` / `stores`: {bytes per instruction: how many such instructions} for global memory
    (`cp.async` copies count as loads). `registers` / `local_bytes`: None when no `cuobjdump` ran.
    """

    loads: dict[int, int] = field(default_factory=dict)
    stores: dict[int, int] = field(default_factory=dict)
    instructions: int = 0
    mma: int = 0
    wgmma: int = 0
    tma: int = 0
    divisible_args: tuple[str, ...] = ()
    registers: int | None = None
    local_bytes: int | None = None
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)  # argument -> "address", "bound", "loop"
    shared_bytes: int | None = None  # shared memory a program uses (None: not known)

    def with_uses(self, uses: dict[str, tuple[str, ...]]) -> CodeFacts:
        return dataclasses.replace(self, uses=uses)

    def summary(self, counts: bool = True) -> str:
        """One short line: `2x128-bit loads, 2x128-bit stores, 96 instructions, 18 registers`
        (`counts=False`: the memory, tensor-core and TMA part only)."""
        parts = [_widths_words(self.loads, "loads"), _widths_words(self.stores, "stores")]
        if counts:
            parts.append(f"{self.instructions} instructions")
        if self.wgmma or self.mma:
            parts.append(f"{self.wgmma} wgmma, {self.mma} mma")
        if self.tma:
            parts.append(f"{self.tma} TMA copies")
        if self.registers is not None and counts:
            parts.append(f"{self.registers} registers")
        if self.local_bytes:
            parts.append(f"{self.local_bytes} B spilled")
        return ", ".join(p for p in parts if p)

    def to_dict(self) -> dict:
        return {"loads": {str(k): v for k, v in sorted(self.loads.items())},
                "stores": {str(k): v for k, v in sorted(self.stores.items())},
                "instructions": self.instructions, "mma": self.mma, "wgmma": self.wgmma, "tma": self.tma,
                "divisible_args": list(self.divisible_args), "registers": self.registers,
                "local_bytes": self.local_bytes, "uses": {k: list(v) for k, v in self.uses.items()},
                "shared_bytes": self.shared_bytes}


def _widths_words(widths: dict[int, int], what: str) -> str:
    if not widths:
        return f"no global {what}"
    return " + ".join(f"{n}x{size * 8}-bit" for size, n in sorted(widths.items(), reverse=True)) + f" {what}"


def _access_bytes(tokens: list[str]) -> int | None:
    vector, bits = 1, None
    for token in tokens:
        if (match := _VECTOR_TOKEN.match(token)) is not None:
            vector = int(match.group(1))
        elif (match := _TYPE_TOKEN.match(token)) is not None:
            bits = int(match.group(1))
    return None if bits is None else vector * bits // 8


def ptx_facts(ptx: str) -> CodeFacts:
    """Global access widths, tensor-core and TMA use and the instruction count of one PTX module."""
    loads: dict[int, int] = {}
    stores: dict[int, int] = {}
    instructions = mma = wgmma = tma = 0
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line.startswith((".", "{", "}", "$", ")")) or line.endswith(":") or not line.endswith(";"):
            continue
        instructions += 1
        if (match := _GLOBAL_ACCESS.match(line)) is not None:
            size = _access_bytes(match.group(2).strip(".").split("."))
            if size is not None:
                bucket = loads if match.group(1) == "ld" else stores
                bucket[size] = bucket.get(size, 0) + 1
        elif (match := _ASYNC_COPY.match(line)) is not None:
            size = int(match.group(1), 0)
            loads[size] = loads.get(size, 0) + 1
        elif "cp.async.bulk.tensor" in line:
            tma += 1
        elif "wgmma.mma_async" in line:
            wgmma += 1
        elif re.search(r"(?:^|\s)mma\.sync", line):
            mma += 1
    return CodeFacts(loads, stores, instructions, mma, wgmma, tma)


def divisible_args(ttir: str, arg_names: list[str]) -> tuple[str, ...]:
    """The kernel arguments the TTIR marks `tt.divisibility = 16`.

    Newer Triton names TTIR arguments after the parameters (`%x_ptr`); older Triton numbers them
    (`%arg0`): those are named from `arg_names`, the kernel's non-constexpr parameters in order.
    """
    match = _TTIR_FUNC.search(ttir)
    if match is None:
        return ()
    found = []
    for position, arg in enumerate(_TTIR_ARG.finditer(match.group(1))):
        name, attributes = arg.group(1), arg.group(2) or ""
        if "tt.divisibility = 16" not in attributes:
            continue
        if re.fullmatch(r"arg\d+", name) and position < len(arg_names):
            name = arg_names[position]
        found.append(name)
    return tuple(found)


_TTIR_OP = re.compile(r"^\s*(?:(%[\w$.#]+)(?::\d+)?(?:\s*,\s*%[\w$.#]+)*\s*=\s*)?\"?([a-z_]+\.[\w.]+)\"?(.*)$")
_SSA = re.compile(r"%[\w$.#]+")
# Ops through which a value keeps its role (a splat of a bound is still the bound).
_PASS_THROUGH = ("tt.splat", "tt.broadcast", "tt.expand_dims", "arith.extsi", "arith.extui", "arith.trunci",
                 "arith.index_cast", "arith.muli", "arith.addi", "arith.subi", "tt.reshape", "arith.constant")
_ADDRESS_OPS = ("tt.addptr", "tt.make_tensor_ptr", "tt.make_tensor_descriptor", "tt.advance")


def _inside_loops(lines: list[str]) -> list[bool]:
    """For each TTIR line, whether it lies in the body of an `scf.for` / `scf.while` (region braces
    counted per line; an attribute dict opens and closes on its own line)."""
    stack: list[bool] = []
    inside = []
    for line in lines:
        inside.append(any(stack))
        code = line.split(" loc(")[0]
        net = code.count("{") - code.count("}")
        looping = "scf.for" in code or "scf.while" in code
        for _ in range(max(net, 0)):
            stack.append(looping)
        for _ in range(max(-net, 0)):
            if stack:
                stack.pop()
    return inside


def param_uses(ttir: str, name: str, arg_names: list[str]) -> tuple[str, ...]:
    """How the TTIR uses argument `name`: "address" (pointer arithmetic), "bound" (a comparison:
    a mask or a branch), "loop" (an `scf.for` bound or step), through splats, casts and integer
    arithmetic; "in-loop" besides when one of those uses sits inside a loop body (done once per
    iteration, not once per program). `arg_names` numbers older Triton's `%argN`.
    """
    if re.search(r"%" + re.escape(name) + r"\s*:", ttir):
        start = "%" + name
    elif name in arg_names:
        start = f"%arg{arg_names.index(name)}"
    else:
        return ()
    tracked = {start}
    roles: set[str] = set()
    lines = ttir.splitlines()
    in_loop = _inside_loops(lines)
    for _ in range(6):  # a few passes: SSA order is textual, loops may refer back
        grew = False
        for index, line in enumerate(lines):
            match = _TTIR_OP.match(line)
            if match is None:
                continue
            result, op, rest = match.group(1), match.group(2), match.group(3).split(" loc(")[0]
            operands = set(_SSA.findall(rest))
            if not operands & tracked:
                continue
            role = ("address" if op in _ADDRESS_OPS else "bound" if op == "arith.cmpi"
                    else "loop" if op == "scf.for" else None)
            if role is not None:
                roles.add(role)
                if in_loop[index] and role != "loop":
                    roles.add("in-loop")
            if op in _PASS_THROUGH and result and result not in tracked:
                tracked.add(result)
                grew = True
        if not grew:
            break
    return tuple(sorted(roles))


def resource_usage(cuobjdump_output: str) -> tuple[int, int] | None:
    """(registers, local memory bytes) of the first function in `cuobjdump -res-usage` output."""
    match = _RESOURCE.search(cuobjdump_output)
    return None if match is None else (int(match.group(1)), int(match.group(4)))


def code_facts(ttir: str, ptx: str, arg_names: list[str], usage: tuple[int, int] | None = None) -> CodeFacts:
    """All the facts of one compiled variant (see module docstring)."""
    facts = ptx_facts(ptx)
    registers, local_bytes = usage if usage is not None else (None, None)
    return CodeFacts(facts.loads, facts.stores, facts.instructions, facts.mma, facts.wgmma, facts.tma,
                     divisible_args(ttir, arg_names), registers, local_bytes)


# A demotion that only adds a few address computations is free; one that grows the code this much is not.
INSTRUCTION_GROWTH_COSTLY = 0.25
INSTRUCTION_GROWTH_MIN = 32


# sm_90 (H100/H200) limits per SM: 65,536 32-bit registers, allocated per warp in units of 256 (a
# thread's count rounded up to a multiple of 8); at most 64 resident warps and 32 resident blocks;
# 228 KiB of shared memory, of which each resident block also reserves 1 KiB.
SM90_REGISTERS_PER_SM = 65536
SM90_REGISTER_UNIT_PER_THREAD = 8
SM90_MAX_WARPS_PER_SM = 64
SM90_MAX_BLOCKS_PER_SM = 32
SM90_SHARED_BYTES_PER_SM = 228 * 1024
SM90_SHARED_BYTES_RESERVED_PER_BLOCK = 1024
DEFAULT_NUM_WARPS = 4  # Triton's launch default


def resident_warps(registers: int, num_warps: int, shared_bytes: int | None = None) -> int:
    """The warps of a kernel using `registers` per thread, `num_warps` per program and `shared_bytes`
    of shared memory per program (None: not counted), that one sm_90 SM holds at once."""
    per_thread = -(-max(registers, 1) // SM90_REGISTER_UNIT_PER_THREAD) * SM90_REGISTER_UNIT_PER_THREAD
    blocks = min(SM90_REGISTERS_PER_SM // (per_thread * 32 * num_warps), SM90_MAX_WARPS_PER_SM // num_warps,
                 SM90_MAX_BLOCKS_PER_SM)
    if shared_bytes:
        blocks = min(blocks, SM90_SHARED_BYTES_PER_SM // (shared_bytes + SM90_SHARED_BYTES_RESERVED_PER_BLOCK))
    return blocks * num_warps


def occupancy_drop(before: CodeFacts, after: CodeFacts, num_warps: int = DEFAULT_NUM_WARPS) -> str | None:
    """`registers 30 -> 128: 64 -> 16 warps per SM`, or None, when the demoted code's registers at
    least halve the warps an SM holds.

    Half because a memory-bound kernel hides latency with the warps in flight: on an H100, a kernel
    whose registers went 30 -> 56 (64 -> 36 warps per SM at 4 warps a program) ran 1.01x, and 30 -> 128
    (64 -> 16 warps) ran 1.25x (benchmarks/results/demotion_cost.md).
    """
    if before.registers is None or after.registers is None or after.registers <= before.registers:
        return None
    if not 1 <= num_warps <= SM90_MAX_WARPS_PER_SM:
        return None
    warps_before = resident_warps(before.registers, num_warps, before.shared_bytes)
    warps_after = resident_warps(after.registers, num_warps, after.shared_bytes)
    if warps_before == 0 or warps_after * 2 > warps_before:
        return None
    return (f"registers {before.registers} -> {after.registers}: "
            f"{warps_before} -> {warps_after} warps per SM at {num_warps} warps a program")


def _narrowed(before: dict[int, int], after: dict[int, int], what: str) -> str | None:
    """`2 of 2 128-bit loads become 32-bit`, or None when no access got narrower."""
    if not before:
        return None
    grown = sorted((size for size, n in after.items() if n > before.get(size, 0)), reverse=True)
    for size in sorted(before, reverse=True):
        lost = before[size] - after.get(size, 0)
        narrower = [g for g in grown if g < size]
        if lost > 0 and narrower:
            new = narrower[0]
            words = f"{lost} of {before[size]} {size * 8}-bit {what} become {new * 8}-bit"
            total_before, total_after = sum(before.values()), sum(after.values())
            return words if total_before == total_after else f"{words} ({total_before} -> {total_after} {what})"
    return None


def _other_prices(before: CodeFacts, after: CodeFacts) -> list[str]:
    """What the demoted code loses besides access widths: tensor cores, TMA, registers to spills."""
    prices = []
    if before.wgmma and not after.wgmma:
        prices.append(f"wgmma lost ({before.wgmma} -> 0; {after.mma} mma.sync)")
    elif before.mma and not (after.mma or after.wgmma):
        prices.append(f"tensor-core mma lost ({before.mma} -> 0)")
    if before.tma and after.tma < before.tma:
        prices.append(f"TMA copies {before.tma} -> {after.tma}")
    if (after.local_bytes or 0) > (before.local_bytes or 0):
        prices.append(f"spills {before.local_bytes or 0} -> {after.local_bytes} B of local memory")
    return prices


def compare_facts(before: CodeFacts, after: CodeFacts, degenerate: bool = False,
                  num_warps: int = DEFAULT_NUM_WARPS) -> tuple[list[str], list[str]]:
    """(prices, notes): what the demoted code (`after`) loses that matters, and what changed harmlessly.

    `degenerate`: the specialized variant is the one for the value 1 (a length of one, a single
    row). Code grown there with every access unchanged is a note, not a price: the general code runs
    the same loads once, and its extra instructions are address arithmetic a memory-bound kernel hides.
    Registers grown enough to halve the warps an SM holds (`occupancy_drop`, at `num_warps` per
    program) are a price either way.
    """
    prices: list[str] = []
    notes: list[str] = []
    for what, b, a in (("loads", before.loads, after.loads), ("stores", before.stores, after.stores)):
        narrowed = _narrowed(b, a, what)
        if narrowed:
            prices.append(narrowed)
    prices += _other_prices(before, after)
    accesses_kept = not prices
    growth = after.instructions - before.instructions
    grown = (before.instructions and growth >= INSTRUCTION_GROWTH_MIN
             and growth > INSTRUCTION_GROWTH_COSTLY * before.instructions)
    if grown and not (degenerate and accesses_kept):
        prices.append(f"{growth * 100 // before.instructions}% more instructions "
                      f"({before.instructions} -> {after.instructions})")
    elif grown:
        notes.append(f"{growth * 100 // before.instructions}% more instructions at the value 1 only "
                     f"({before.instructions} -> {after.instructions}), every access unchanged")
    elif growth:
        notes.append(f"instructions {before.instructions} -> {after.instructions}")
    occupancy = occupancy_drop(before, after, num_warps)
    if occupancy:
        prices.append(occupancy)
    elif before.registers is not None and after.registers is not None and after.registers != before.registers:
        notes.append(f"registers {before.registers} -> {after.registers}")
    lost_hints = [name for name in before.divisible_args if name not in after.divisible_args]
    if lost_hints:
        notes.append("tt.divisibility=16 dropped on " + ", ".join(lost_hints))
    return prices, notes


def likely_impact(before: CodeFacts, after: CodeFacts, param: str, roles: set[str] | frozenset[str],
                  is_pointer: bool = False, num_warps: int = DEFAULT_NUM_WARPS) -> tuple[str, str]:
    """("large" | "small", why) for a costly demotion of `param`, from what the lost width touches.

    "large" means 1.5x slower or more is expected; "small" under 1.5x, possibly nothing measurable.
    Measured on H100/H200 (benchmarks/results/demotion_cost.md): losing the divisibility of a mask
    bound costs every access it guards (2.7-3.4x on liger's norms and softmax), while losing a row
    stride's only misaligns each row's base address, computed once per program (1.00-1.42x).
    Tensor cores, TMA or spills lost, a pointer's alignment, or a use inside a loop: large. Every
    access kept and only the warps an SM holds halved by registers (`occupancy_drop`): small (1.25x).
    """
    if _other_prices(before, after):
        return "large", "tensor-core, TMA or register work is lost"
    accesses_kept = not (_narrowed(before.loads, after.loads, "loads") or _narrowed(before.stores, after.stores,
                                                                                    "stores"))
    if accesses_kept and occupancy_drop(before, after, num_warps):
        return "small", "occupancy: every access is kept, fewer warps per SM hide its latency"
    if is_pointer:
        return "large", f"every access through {param} loses its alignment"
    if "bound" in roles:
        return "large", f"{param} bounds a mask or branch: every access it guards pays"
    if "in-loop" in roles:
        return "large", f"{param} enters an address inside a loop: every iteration pays"
    if roles & {"address"}:
        return "small", f"{param} only offsets a base address, once per program"
    return "large", f"where {param} is used could not be told from the code"
