"""synccheck: barriers reached by part of a warp or CTA, bad thread counts, warp-sync masks."""
from __future__ import annotations

from typing import List

import numpy as np

from emulator import ir
from emulator.base.errors import DeviceError
from emulator.machine.lanes import lanes_of
from emulator.machine.observe import Observer
from emulator.machine.operands import reader
from emulator.machine.states import AT_BARRIER, EXITED, INF, WARP_SYNC
from emulator.observers.checks.common import MASKED_CLASSES, Findings, is_warp_sync, lane_list, location, who
from emulator.runtime.names import plain_name
from isa.warp import lane_mask


class SyncChecker(Observer):
    """synccheck: aligned barriers (bar.sync, __syncthreads) that only part of a warp or CTA reaches,
    barrier thread counts that are not a multiple of 32 (the GPU stops the launch with an illegal
    instruction) or are never reached, and member masks of warp-synchronous instructions
    (shfl/vote/match/redux/elect .sync, bar.warp.sync) that leave out the calling lane (or name a lane
    that does), name lanes that are not there with it, or (before sm_70) name exited lanes."""

    def __init__(self):
        self.findings = Findings()
        self._readers = {}

    def begin_launch(self, launch) -> None:
        self.launch = launch
        self.about_to_exit = np.array([instr.control == ir.EXIT and instr.guard is None
                                       for instr in launch.program.instrs] + [False], dtype=bool)

    def begin_batch(self, batch) -> None:
        self.batch = batch
        self._readers = {}
        self.open_phase = {}
        self.suspects = {}

    def _read(self, batch, instr, ref, sel):
        key = (instr.pc, id(ref))
        if key not in self._readers:
            self._readers[key] = reader(batch, ref, "u32")
        return np.broadcast_to(np.asarray(self._readers[key](sel)), (len(lanes_of(sel, batch.n)),))

    # member masks
    def step(self, batch, instr, sel, warps, lanes) -> None:
        if (instr.control != ir.STRAIGHT and not is_warp_sync(instr)) or "sync" not in instr.opcode.split("."):
            return
        op_class = instr.op_class
        if op_class in MASKED_CLASSES:
            mask_ref = instr.operands[-1]
        elif op_class == "bar":
            mask_ref = instr.operands[0] if instr.operands else None
        else:
            return
        if mask_ref is None or isinstance(mask_ref, (ir.AddrRef, ir.VecRef, ir.PredPairRef)):
            return
        threads = lanes_of(sel, batch.n)
        if instr.guard is not None:
            reg, negated = instr.guard
            active = batch.regs[reg.index][sel] != negated
            threads = threads[active]
            sel = threads
            if len(threads) == 0:
                return
        masks = self._read(batch, instr, mask_ref, sel).astype(np.uint32)
        lane = (threads & 31).astype(np.uint32)
        warp = threads >> 5
        present = np.zeros(batch.n, dtype=bool)
        present[threads] = True
        present_bits = lane_mask(present)
        rpc = np.minimum(batch.rpc, len(self.about_to_exit) - 1)
        gone = (batch.status == EXITED) | ((batch.rpc != INF) & self.about_to_exit[rpc] & ~present)
        gone_bits = lane_mask(gone)
        own = np.uint32(1) << lane
        leaves_out = (masks & own) == 0
        without_caller = np.zeros(batch.n, dtype=bool)
        without_caller[threads[leaves_out]] = True
        without_caller_bits = lane_mask(without_caller)

        def invalid_arguments(m, t):
            if not m >> (t & 31) & 1:
                return f"membermask 0x{m:08x} does not include lane {t & 31}"
            return (f"lanes {lane_list(int(without_caller_bits[t >> 5]))} execute it with lane {t & 31} but leave "
                    f"themselves out of their membermask")
        self._mask_finding(batch, instr, threads, masks, without_caller_bits[warp] != 0, "Invalid arguments",
                           invalid_arguments)
        if self.launch.arch < 70:
            self._mask_finding(batch, instr, threads, masks, (masks & gone_bits[warp]) != 0, "Invalid arguments",
                               lambda m, t: f"membermask 0x{m:08x} names lanes "
                                            f"{lane_list(int(gone_bits[t >> 5]) & m)}, which have exited (before "
                                            f"sm_70 every lane of the mask must execute it)", "exited")
        if op_class == "bar" and self.launch.arch >= 70:
            return  # from sm_70 bar.warp.sync waits for the lanes of its mask: arriving apart is correct
        absent = masks & ~present_bits[warp] & ~gone_bits[warp]
        self._mask_finding(batch, instr, threads, masks, absent != 0, "Divergent thread(s) in warp",
                           lambda m, t: f"membermask 0x{m:08x} names lanes "
                                        f"{lane_list(m & ~int(present_bits[t >> 5]) & ~int(gone_bits[t >> 5]))} "
                                        f"that do not execute this instruction with lane {t & 31}")

    def _mask_finding(self, batch, instr, threads, masks, bad, what, describe, variant=""):
        if not bad.any():
            return
        example = int(np.flatnonzero(bad)[0])
        thread_index, mask = int(threads[example]), int(masks[example])

        def lines():
            thread, block = who(batch, thread_index)
            return [f"Barrier error detected. {what}.",
                    f"at {location(self.launch, instr)}",
                    f"by {thread} in {block}",
                    describe(mask, thread_index)]
        self.findings.add(("mask", instr.pc, what, variant), "error", lines, int(bad.sum()), "threads",
                          per_thread=True)

    # barriers
    @staticmethod
    def _barrier_operands(instr):
        """(barrier id and thread count operands, whether it is an aligned barrier for the whole CTA)."""
        parts = instr.opcode.split(".")
        operands = instr.operands
        if parts[0] in ("bar", "barrier") and "red" in parts:
            operands = operands[1:-1]
        counted = parts[0] in ("bar", "barrier") and len(operands) > 1
        aligned = parts[0] in ("bar", "BAR") or "aligned" in parts
        return operands, aligned and not counted

    def barrier(self, batch, instr, sel, barrier_id, released) -> None:
        operands, whole_cta = self._barrier_operands(instr)
        arriving = lanes_of(sel, batch.n)
        if len(arriving) and instr.opcode.split(".")[0] in ("bar", "barrier") and len(operands) > 1:
            count = int(self._read(batch, instr, operands[1], sel)[0])
            self._check_count(batch, instr, arriving, count)
        elif len(arriving) and whole_cta:
            self._open_phases(batch, instr, barrier_id, arriving)
        if released is not None and len(released):
            self._close_phases(batch, barrier_id, released)
            self._check_same_instruction(batch, released)

    def _check_same_instruction(self, batch, released):
        """Threads that one aligned barrier released must all have waited at the same instruction."""
        pcs = batch.resume_pc[released] - 1
        if np.all(pcs == pcs[0]):
            return
        instrs = self.launch.program.instrs
        for cta in np.unique(batch.cta_of[released]):
            mine = released[batch.cta_of[released] == cta]
            where = np.unique(batch.resume_pc[mine] - 1)
            if len(where) < 2 or not all(self._barrier_operands(instrs[pc])[1] for pc in where):
                continue
            first = int(mine[0])
            at_first = batch.resume_pc[mine] - 1 == where[0]
            other = int(mine[~at_first][0])

            def lines(first=first, other=other, where=where):
                thread, block = who(batch, first)
                second, _ = who(batch, other)
                places = "; ".join(f"pc {pc} {self.launch.where(instrs[pc])} `{' '.join(instrs[pc].text.split())}`"
                                   for pc in where)
                return ["Barrier error detected. Divergent thread(s) in block.",
                        f"at {location(self.launch, instrs[where[0]])}",
                        f"by {thread} in {block}",
                        f"one barrier released threads waiting at different instructions, e.g. {thread} and "
                        f"{second}: {places}"]
            self.findings.add(("different barriers", tuple(int(pc) for pc in where)), "error", lines,
                              int(at_first.sum()), "threads", per_thread=True)

    def _check_count(self, batch, instr, arriving, count):
        if count % 32 == 0 and 0 < count <= batch.tpc_pad:
            return
        thread_index = int(arriving[0])
        problem = (f"thread count {count} is not a multiple of the warp size (32)" if count % 32 else
                   f"thread count {count} is more than the {batch.tpc} threads of the block: it can never be reached")
        thread, block = who(batch, thread_index)
        text = " ".join(instr.text.split())
        self.findings.add(("count", instr.pc, count), "error",
                          lambda: ["Barrier error detected. Invalid arguments.", f"at {location(self.launch, instr)}",
                                   f"by {thread} in {block}", f"`{text}`: {problem}"])
        if count % 32:
            raise DeviceError("CUDA_ERROR_ILLEGAL_INSTRUCTION", "\n".join(self.report_lines()),
                              f"CUDA_ERROR_ILLEGAL_INSTRUCTION: `{text}` with {problem} in kernel "
                              f"{plain_name(self.launch.program.name)}, pc {instr.pc}, {self.launch.where(instr)}, "
                              f"{block}, {thread} (a GPU stops the launch here)")

    def _open_phases(self, batch, instr, bar, arriving):
        """At the first arrival of a barrier phase in a CTA, note the threads that are neither here,
        nor waiting, nor exited, nor about to exit: they must arrive before the phase completes."""
        ctas = np.unique(batch.cta_of[arriving])
        opened = self.open_phase.setdefault(bar, {})
        new = [int(c) for c in ctas if int(c) not in opened]
        if not new:
            return
        suspects = self.suspects.setdefault(bar, np.zeros(batch.n, dtype=bool))
        in_cta = np.isin(batch.cta_of, new)
        here = np.zeros(batch.n, dtype=bool)
        here[arriving] = True
        rpc = np.minimum(batch.rpc, len(self.about_to_exit) - 1)
        elsewhere = (batch.status != EXITED) & (batch.status != AT_BARRIER) & ~here & (batch.rpc != INF)
        suspects[in_cta] = (elsewhere & ~self.about_to_exit[rpc])[in_cta]
        for cta in new:
            opened[cta] = (instr, int(arriving[0]))

    def _close_phases(self, batch, bar, released):
        opened = self.open_phase.get(bar, {})
        suspects = self.suspects.get(bar)
        released_ctas = batch.cta_of[released]
        for cta in np.unique(released_ctas):
            phase = opened.pop(int(cta), None)
            if phase is None or suspects is None:
                continue
            self._divergence(batch, bar, int(cta), phase, suspects, int(np.count_nonzero(released_ctas == cta)))

    def _divergence(self, batch, bar, cta, phase, suspects, waited):
        """The phase of barrier bar in cta is over (waited threads arrived): report the suspects that
        exited instead of arriving, once per waiting thread as synccheck counts."""
        instr, first = phase
        start, stop = cta * batch.tpc_pad, (cta + 1) * batch.tpc_pad
        missing = np.flatnonzero(suspects[start:stop] & (batch.status[start:stop] == EXITED)) + start
        suspects[start:stop] = False
        if len(missing) == 0:
            return
        missing_per_warp = np.bincount(missing >> 5, minlength=batch.n // 32)
        lanes_per_warp = np.bincount(np.flatnonzero(batch.local_index < batch.tpc) >> 5, minlength=batch.n // 32)
        partial = (missing_per_warp > 0) & (missing_per_warp < lanes_per_warp)
        kind = "warp" if partial.any() else "block"
        example = int(missing[partial[missing >> 5]][0]) if partial.any() else int(missing[0])

        def lines():
            thread, block = who(batch, first)
            absent, _ = who(batch, example)
            return [f"Barrier error detected. Divergent thread(s) in {kind}.",
                    f"at {location(self.launch, instr)}",
                    f"by {thread} in {block}",
                    f"{len(missing)} thread(s) of the block exited without reaching `{' '.join(instr.text.split())}` "
                    f"while {thread} waited, e.g. {absent} (warp {example % batch.tpc_pad // 32}); "
                    f"sm_70+ lets the barrier complete because exited threads count as arrived, "
                    f"earlier GPUs hang here"]
        self.findings.add(("divergent", instr.pc, kind), "error", lines, waited, "threads", per_thread=True)

    def launch_failed(self, launch, error) -> None:
        """A deadlock: explain the phases that can never complete."""
        batch = getattr(self, "batch", None)
        if batch is None:
            return
        for bar, opened in self.open_phase.items():
            suspects = self.suspects.get(bar)
            for cta, phase in list(opened.items()):
                if suspects is not None:
                    waiting_here = (batch.status == AT_BARRIER) & (batch.bar_wait == bar) & (batch.cta_of == cta)
                    self._divergence(batch, bar, cta, phase, suspects, int(np.count_nonzero(waiting_here)))
        waiting = np.flatnonzero(batch.status == AT_BARRIER)
        if error.cuda_error == "GPUEMU_DEADLOCK" and len(waiting):
            for bar in np.unique(batch.bar_wait[waiting]):
                if bar == WARP_SYNC:
                    continue
                at_bar = waiting[batch.bar_wait[waiting] == bar]
                pc = int(batch.resume_pc[at_bar[0]]) - 1
                instr = launch.program.instrs[pc]
                example = int(at_bar[0])
                expected = int(batch.bar_expected[bar][batch.cta_of[example]])

                def lines(instr=instr, example=example, count=len(at_bar), expected=expected):
                    thread, block = who(batch, example)
                    need = f"{expected} {'warps' if batch.per_warp_barriers else 'threads'}" if expected else \
                        ("every warp of the block" if batch.per_warp_barriers else "every thread of the block")
                    return ["Barrier error detected. Barrier can never complete (deadlock).",
                            f"at {location(launch, instr)}",
                            f"by {thread} in {block}",
                            f"{count} thread(s) wait at `{' '.join(instr.text.split())}`, which needs {need}"]
                self.findings.add(("deadlock", pc), "error", lines)

    def report_lines(self) -> List[str]:
        return [line for finding in self.findings.items.values() for line in finding.render()]
