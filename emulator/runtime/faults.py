"""The machine's stops rendered as the errors people read: compute-sanitizer style reports and one-line summaries."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from emulator import ir
from emulator.base.errors import DeviceError
from emulator.machine.stops import (AssertFailure, Deadlock, IllegalInstruction, Livelock, MachineStop, MemoryFault,
                                    StepLimit, ThreadPlace, Trap, WarpState)
from emulator.runtime.names import plain_name


def where(program: ir.Program, instr: ir.Instr) -> str:
    """`file.ptx:LINE` of an instruction, with its CUDA source line when the PTX carries one."""
    text = f"{program.source_name}:{instr.line}"
    source = source_text(instr)
    if source is not None:
        text += f" ({source})"
    return text


def source_text(instr: ir.Instr, name=lambda path: path) -> Optional[str]:
    """`file:LINE` of an instruction's CUDA source, the user's line first: code inlined from elsewhere (CUDA's
    headers) reads `t.cu:32, inlined: atomicAdd at sm_20_atomic_functions.hpp:84` (`name` shortens paths)."""
    if instr.source is None:
        return None
    return chain_text(instr.source_frames(), name)


def chain_text(frames, name=lambda path: path) -> str:
    """`file:LINE, inlined: f at file:LINE` of a chain of (function or None, (file, line)), innermost first."""
    path, line = frames[-1][1]
    text = f"{name(path)}:{line}"
    if len(frames) > 1:
        text += ", inlined: " + ", ".join(f"{plain_name(function)} at {name(place[0])}:{place[1]}"
                                          for function, place in reversed(frames[:-1]))
    return text


def who(place: Optional[ThreadPlace]) -> str:
    if place is None:
        return ""
    block, thread = place.block, place.thread
    return f"block ({block[0]},{block[1]},{block[2]}), thread ({thread[0]},{thread[1]},{thread[2]})"


def render(stop: MachineStop, program: ir.Program, arch: int) -> DeviceError:
    """The DeviceError a stop of this program's launch ends in."""
    name = plain_name(program.name)
    if isinstance(stop, MemoryFault):
        return _memory_fault(stop, program, name)
    if isinstance(stop, Deadlock):
        counting = "warps" if stop.per_warp_barriers else "threads"
        summary = (f"GPUEMU_DEADLOCK: kernel {name} can never finish: {counting} wait at a barrier that the rest "
                   f"of their block will not reach (sm_{arch}): " + describe_warps(stop.warps, program))
        return DeviceError("GPUEMU_DEADLOCK", summary, summary)
    if isinstance(stop, Livelock):
        what = (f"over {stop.spin_limit:,} loop iterations no pc, register, thread state or memory byte changed "
                f"(--spin-limit)")
        summary = f"GPUEMU_LIVELOCK: kernel {name} can never finish: {what}: " + describe_warps(stop.warps, program)
        return DeviceError("GPUEMU_LIVELOCK", summary, summary)
    if isinstance(stop, StepLimit):
        instr = stop.instr
        summary = (f"GPUEMU_STEP_LIMIT: kernel {name} ran more than {stop.max_steps} scheduler steps "
                   f"(--max-steps); last at pc {instr.pc}, {where(program, instr)} `{instr.text}`")
        return DeviceError("GPUEMU_STEP_LIMIT", summary, summary)
    if isinstance(stop, IllegalInstruction):
        instr = stop.instr
        summary = (f"CUDA_ERROR_ILLEGAL_INSTRUCTION: `{instr.text}` {stop.problem} in kernel {name}, "
                   f"pc {instr.pc}, {where(program, instr)}, {who(stop.thread)}")
        return DeviceError("CUDA_ERROR_ILLEGAL_INSTRUCTION", summary, summary)
    if isinstance(stop, Trap):
        instr = stop.instr
        summary = (f"CUDA_ERROR_LAUNCH_FAILED: trap in kernel {name}, pc {instr.pc}, {where(program, instr)}, "
                   f"{who(stop.thread)}")
        return DeviceError("CUDA_ERROR_LAUNCH_FAILED", summary, summary)
    if isinstance(stop, AssertFailure):
        summary = (f"CUDA_ERROR_ASSERT: {stop.source}:{stop.line}: Assertion `{stop.message}` failed in kernel "
                   f"{name}, {who(stop.thread)}")
        return DeviceError("CUDA_ERROR_ASSERT", summary, summary)
    raise TypeError(f"no rendering for {type(stop).__name__}")


def _memory_fault(stop: MemoryFault, program: ir.Program, name: str) -> DeviceError:
    fault, instr = stop.fault, stop.instr
    cuda_error = "CUDA_ERROR_MISALIGNED_ADDRESS" if fault.kind == "misaligned" else "CUDA_ERROR_ILLEGAL_ADDRESS"
    access = {"load": "read", "store": "write", "atomic": "atomic"}.get(fault.op, fault.op)
    detail_lines = [line.strip() for line in fault.detail.splitlines() if line.strip()]
    place = stop.thread
    thread_text = f"({','.join(map(str, place.thread))})" if place else "?"
    block_text = f"block ({','.join(map(str, place.block))})" if place else "?"
    report = "\n".join(
        [f"========= Invalid __{fault.space}__ {access} of size {fault.width} bytes",
         f"=========     at {name}+0x{instr.pc * 16:x} in {where(program, instr)}",
         f"=========     by thread {thread_text} in {block_text}"] +
        [f"=========     {line}" for line in detail_lines])
    summary = (f"{cuda_error}: invalid __{fault.space}__ {access} of {fault.width} bytes at "
               f"0x{fault.address:x} ({'; '.join(detail_lines) or fault.kind}) in kernel {name}, pc {instr.pc}, "
               f"{where(program, instr)} `{instr.text}`, {who(place)}")
    return DeviceError(cuda_error, report, summary)


def describe_warps(warps: Sequence[WarpState], program: ir.Program) -> str:
    """Every warp's state and pc, warps with the same story merged: `block (0,0,0) warps 0-3 wait at ...`."""
    def at(pc: int) -> str:
        instr = program.instrs[pc]
        return f"pc {pc} {where(program, instr)} `{' '.join(instr.text.split())}`"

    def story(state: str, pc: int, plural: bool) -> str:
        if state == "exited":
            return "exited"
        if state == "barrier":
            return f"wait{'' if plural else 's'} at the barrier at {at(pc)}"
        return f"{'are' if plural else 'is'} at {at(pc)}"

    per_block: Dict[tuple, List[Tuple[int, tuple]]] = {}
    for warp in warps:
        per_block.setdefault(warp.block, []).append((warp.warp, warp.parts))
    blocks: Dict[str, List[tuple]] = {}
    for block, members in per_block.items():
        merged: Dict[tuple, List[int]] = {}
        for number, parts in members:
            merged.setdefault(parts, []).append(number)
        texts = []
        for parts, numbers in merged.items():
            subject = f"warp{'s' if len(numbers) > 1 else ''} {ranges(numbers)}"
            if len(parts) == 1:
                texts.append(f"{subject} {story(parts[0][0], parts[0][1], len(numbers) > 1)}")
            else:
                texts.append(f"{subject}: " + ", ".join(
                    f"lane{'s' if len(lanes) > 1 else ''} {ranges(lanes)} {story(state, pc, len(lanes) > 1)}"
                    for state, pc, lanes in parts))
        blocks.setdefault("; ".join(texts), []).append(block)
    lines = []
    for text, members in blocks.items():
        first = members[0]
        label = f"block ({first[0]},{first[1]},{first[2]})"
        if len(members) > 1:
            label += f" and {len(members) - 1} more block{'s' if len(members) > 2 else ''} like it"
        lines.append(f"{label}: {text}")
    return " | ".join(lines)


def ranges(values: Sequence[int]) -> str:
    """[0, 1, 2, 5] → `0-2,5`."""
    values = sorted(values)
    parts, start = [], None
    for index, value in enumerate(values):
        if start is None:
            start = value
        if index + 1 == len(values) or values[index + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ",".join(parts)
