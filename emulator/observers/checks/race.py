"""racecheck: shared-memory (and, within a CTA, global) hazards between threads with no barrier between them."""
from __future__ import annotations

from typing import List

import numpy as np

from emulator import ir
from emulator.machine.lanes import lanes_of
from emulator.machine.observe import Observer
from emulator.observers.checks.common import (ACCESS_WORDS, CONSTANT_BANKS, GLOBAL, PREFIX, SHARED, Finding, Findings,
                                              GlobalTable, _first_of_each, _last_of_each, _Shadow, is_fence, is_strong, is_warp_sync,
                                              location, resolve, thread_array, who)


class RaceChecker(Observer):
    """racecheck: hazards on shared memory, and on global memory between threads of one CTA, between
    accesses of different threads (of different warps; on sm_70+ also of one warp) that no barrier
    (bar.sync; __syncwarp within a warp) orders. As in the PTX memory model, two strong accesses
    (atomics, volatile, relaxed, acquire, release) do not race; an access counts as ordered before a
    later one when both threads executed a fence (membar/fence, __threadfence) after the first."""

    def __init__(self):
        self.findings = Findings()
        self.hazards = 0

    def begin_launch(self, launch) -> None:
        self.launch = launch
        self.intra_warp = launch.arch >= 70
        self.shared_size = launch.shared_bytes

    def begin_batch(self, batch) -> None:
        self.batch = batch
        self.cta_epoch = np.zeros(batch.n_ctas, dtype=np.int32)
        self.warp_epoch = np.zeros(batch.n // 32, dtype=np.int32)
        self.fence_step = np.full(batch.n, -1, dtype=np.int64)
        self.shared_granules = (self.shared_size + 3) // 4
        self.shared = None
        self.global_shadow = None
        self.table = GlobalTable(batch.memory, skip=getattr(self, "skip_allocations", ()))
        writable = self.table.writable
        sizes = (self.table.size.astype(np.int64) + 3) // 4
        self.global_base = np.concatenate(([0], np.cumsum(np.where(writable, sizes, 0))))[:-1]

    # synchronisation
    def barrier(self, batch, instr, sel, barrier_id, released) -> None:
        if released is not None and len(released):
            self.cta_epoch[np.unique(batch.cta_of[released])] += 1

    def step(self, batch, instr, sel, warps, lanes) -> None:
        if is_warp_sync(instr):
            self.warp_epoch[np.unique(lanes_of(sel, batch.n) >> 5)] += 1
        elif instr.control == ir.STRAIGHT and is_fence(instr):
            self.fence_step[sel] = batch.steps

    # accesses
    def memory(self, batch, instr, op, space, addresses, threads, width) -> None:
        if width not in (1, 2, 4, 8, 16) or space == CONSTANT_BANKS:
            return
        threads = thread_array(batch, threads)
        region, offsets = resolve(space, addresses)
        aligned = (offsets & np.uint64(width - 1)) == 0
        shared = (region == SHARED) & aligned & (offsets + np.uint64(width) <= np.uint64(self.shared_size))
        if shared.any():
            if self.shared is None:
                self.shared = _Shadow(batch.n_ctas * self.shared_granules)
            lanes = np.flatnonzero(shared)
            cta = batch.cta_of[threads[lanes]]
            base = cta * self.shared_granules
            self._check(batch, instr, op, self.shared, lanes, base, offsets[lanes], threads[lanes], width,
                        "shared", np.zeros(len(lanes), dtype=np.int64))
        on_global = (region == GLOBAL) & aligned
        if on_global.any():
            lanes = np.flatnonzero(on_global)
            index, inside = self.table.find(offsets[lanes], width)
            keep = inside & self.table.writable[index]
            if keep.any():
                lanes, index = lanes[keep], index[keep]
                if self.global_shadow is None:
                    total = int(self.global_base[-1] + (self.table.size[-1] + 3) // 4) if len(self.global_base) else 0
                    self.global_shadow = _Shadow(max(total, 1))
                inside_offsets = offsets[lanes] - self.table.start[index]
                base = self.global_base[index]
                self._check(batch, instr, op, self.global_shadow, lanes, base, inside_offsets, threads[lanes],
                            width, "global", self.table.start[index])

    def _check(self, batch, instr, op, shadow: _Shadow, lanes, base, offsets, threads, width, space, origin):
        per_lane = max(width // 4, 1)
        granule_in = (offsets.astype(np.int64) >> 2)
        if per_lane > 1:
            granule = (base + granule_in)[:, None] + np.arange(per_lane, dtype=np.int64)[None, :]
            granule = granule.reshape(-1)
            mask = np.full(len(granule), 0xF, dtype=np.uint8)
            thread = np.repeat(threads, per_lane)
            byte0 = ((granule_in[:, None] + np.arange(per_lane)[None, :]) * 4).reshape(-1)
            origin = np.repeat(np.broadcast_to(origin, (len(lanes),)), per_lane)
        else:
            granule = base + granule_in
            shift = (offsets & np.uint64(3)).astype(np.uint8)
            mask = (np.uint8((1 << width) - 1) << shift).astype(np.uint8)
            thread = threads
            byte0 = granule_in * 4
            origin = np.broadcast_to(origin, (len(lanes),))
        cta = batch.cta_of[thread]
        warp = thread >> 5
        epoch = self.cta_epoch[cta]
        wepoch = self.warp_epoch[warp]
        atomic = op == "atomic"
        strong = is_strong(instr)
        fenced = self.fence_step[thread]

        def ordered_against(other_thread, other_epoch, other_wepoch, other_step, other_strong):
            """Entries whose access races with the recorded access of other_thread."""
            valid = (other_thread >= 0) & (other_thread != thread)
            safe_other = np.where(valid, other_thread, 0)
            same_cta = batch.cta_of[safe_other] == cta
            other_warp = safe_other >> 5
            unordered = other_epoch == epoch
            if self.intra_warp:
                unordered &= (other_warp != warp) | (other_wepoch == wepoch)
            else:
                unordered &= other_warp != warp
            unordered &= ~((self.fence_step[safe_other] > other_step) & (fenced > other_step))
            if strong:
                unordered &= ~other_strong
            return valid & same_cta & unordered

        w_thread = shadow.w_thread[granule]
        racing_write = ordered_against(w_thread, shadow.w_epoch[granule], shadow.w_wepoch[granule],
                                       shadow.w_step[granule], shadow.w_strong[granule])
        racing_write &= (shadow.w_mask[granule] & mask) != 0
        if atomic:
            racing_write &= ~shadow.w_atomic[granule]
        if racing_write.any():
            hits = np.flatnonzero(racing_write)
            first_kind = np.where(shadow.w_atomic[granule[hits]], "Atomic", "Write")
            self._report(batch, instr, op, space, hits, w_thread[hits], shadow.w_pc[granule[hits]], first_kind,
                         thread, byte0, mask & shadow.w_mask[granule], origin)
        if op != "load":
            r_thread = shadow.r_thread[granule]
            partner = np.where(r_thread != thread, r_thread, shadow.r_other[granule])
            partner_pc = np.where(r_thread != thread, shadow.r_pc[granule], shadow.r_other_pc[granule])
            racing_read = ordered_against(partner, shadow.r_epoch[granule], shadow.r_wepoch[granule],
                                          shadow.r_step[granule], shadow.r_strong[granule])
            racing_read &= (shadow.r_mask[granule] & mask) != 0
            if racing_read.any():
                hits = np.flatnonzero(racing_read)
                self._report(batch, instr, op, space, hits, partner[hits], partner_pc[hits],
                             np.full(len(hits), "Read"), thread, byte0, mask & shadow.r_mask[granule], origin)
            if not atomic and not strong and len(granule) > 1:
                self._same_instruction(batch, instr, op, space, granule, thread, warp, mask, byte0, origin)
            last = _last_of_each(granule)
            g = granule[last]
            shadow.w_thread[g] = thread[last]
            shadow.w_pc[g] = instr.pc
            shadow.w_epoch[g] = epoch[last]
            shadow.w_wepoch[g] = wepoch[last]
            shadow.w_mask[g] = mask[last]
            shadow.w_atomic[g] = atomic
            shadow.w_strong[g] = strong
            shadow.w_step[g] = batch.steps
        else:
            self._record_reads(shadow, instr, granule, thread, mask, epoch, wepoch)
            shadow.r_strong[granule] = strong
            shadow.r_step[granule] = batch.steps

    def _same_instruction(self, batch, instr, op, space, granule, thread, warp, mask, byte0, origin):
        """Lanes of different warps of one CTA that one store instruction sends to the same bytes."""
        order = np.argsort(granule, kind="stable")
        g = granule[order]
        cta = batch.cta_of[thread[order]]
        same = (g[1:] == g[:-1]) & (warp[order][1:] != warp[order][:-1]) & (cta[1:] == cta[:-1]) & \
            ((mask[order][1:] & mask[order][:-1]) != 0)
        if same.any():
            pairs = np.flatnonzero(same)
            second = order[pairs + 1]
            first = order[pairs]
            self._report(batch, instr, op, space, second, thread[first], np.full(len(first), instr.pc),
                         np.full(len(first), "Write"), thread, byte0, mask, origin)

    def _record_reads(self, shadow: _Shadow, instr, granule, thread, mask, epoch, wepoch):
        first = _first_of_each(granule)
        last = _last_of_each(granule)
        g = granule[first]
        first_thread, last_thread = thread[first], thread[last]
        event_mask = np.zeros(len(g), dtype=np.uint8)
        position = np.searchsorted(g, granule)
        np.bitwise_or.at(event_mask, position, mask)
        recorded_warp = shadow.r_thread[g] >> 5
        stale = (shadow.r_thread[g] < 0) | (shadow.r_epoch[g] != epoch[first]) | \
            ((recorded_warp == first_thread >> 5) & (shadow.r_wepoch[g] != wepoch[first]))
        fresh_g = g[stale]
        if len(fresh_g):
            shadow.r_thread[fresh_g] = first_thread[stale]
            shadow.r_pc[fresh_g] = instr.pc
            other = last_thread[stale] != first_thread[stale]
            shadow.r_other[fresh_g] = np.where(other, last_thread[stale], -1)
            shadow.r_other_pc[fresh_g] = np.where(other, instr.pc, -1)
            shadow.r_epoch[fresh_g] = epoch[first][stale]
            shadow.r_wepoch[fresh_g] = wepoch[first][stale]
            shadow.r_mask[fresh_g] = event_mask[stale]
        kept = ~stale
        if kept.any():
            gk = g[kept]
            recorded = shadow.r_thread[gk]
            newcomer = np.where(first_thread[kept] != recorded, first_thread[kept], last_thread[kept])
            add_other = (shadow.r_other[gk] < 0) & (newcomer != recorded)
            shadow.r_other[gk[add_other]] = newcomer[add_other]
            shadow.r_other_pc[gk[add_other]] = instr.pc
            shadow.r_mask[gk] |= event_mask[kept]

    def _report(self, batch, instr, op, space, hits, other_threads, other_pcs, other_kinds, thread, byte0,
                overlap, origin):
        """Hazards of this access (entries `hits`) against earlier accesses, one finding per pair of
        instructions. As racecheck counts them, a hazard is one byte of one warp-level access (lanes of
        a warp on the same byte count once); a pair is an error when any hazard is between warps and a
        warning when all are between lanes of one warp (racecheck: warp-synchronous programming)."""
        launch = self.launch
        second_kind = ACCESS_WORDS[op]
        granule_address = np.broadcast_to(origin, thread.shape).astype(np.int64) + byte0.astype(np.int64)
        for kind in np.unique(other_kinds):
            of_kind = hits[other_kinds == kind]
            kind_threads = other_threads[other_kinds == kind]
            kind_pcs = other_pcs[other_kinds == kind]
            for pc in np.unique(kind_pcs):
                chosen = kind_pcs == pc
                entries = of_kind[chosen]
                partners = kind_threads[chosen]
                example = int(entries[0])
                first_thread = int(partners[0])
                low_byte = int(np.flatnonzero(np.unpackbits(np.array([overlap[example]], np.uint8),
                                                            bitorder="little"))[0])
                address = int(granule_address[example]) + low_byte
                hazards = _hazard_bytes(thread[entries] >> 5, granule_address[entries], overlap[entries])
                self.hazards += hazards
                between_warps = bool(np.any((partners >> 5) != (thread[entries] >> 5)))

                def lines(pc=int(pc), kind=str(kind), first_thread=first_thread, example=example, address=address):
                    first_instr = launch.program.instrs[pc]
                    t1, block = who(batch, first_thread)
                    t2, _ = who(batch, int(thread[example]))
                    return [f"Race reported between {kind} access at {location(launch, first_instr)}",
                            f"and {second_kind} access at {location(launch, instr)}",
                            f"for example {t1} ({kind.lower()}) and {t2} ({second_kind.lower()}) of {block} "
                            f"on __{space}__ address 0x{address:x}"]
                self.findings.add(("race", str(kind), int(pc), second_kind, instr.pc, space),
                                  "error" if between_warps else "warning", lines, hazards, "hazards")

    def report_lines(self) -> List[str]:
        out = []
        for finding in self.findings.items.values():
            head = f"{finding.severity.capitalize()}: {finding.lines[0]}"
            second = finding.lines[1] + (f" [{finding.count} hazards]" if finding.count > 1 else "")
            out += Finding(finding.severity, [head, second] + finding.lines[2:]).render()
        errors, warnings = self.findings.errors(), self.findings.warnings()
        shown = len(self.findings)
        out.append(f"{PREFIX}RACECHECK SUMMARY: {shown} hazard{'s' if shown != 1 else ''} displayed "
                   f"({errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''})")
        return out


def _hazard_bytes(warps: np.ndarray, granule_addresses: np.ndarray, overlap: np.ndarray) -> int:
    """Bytes in the overlap masks, each byte of a granule counted once per warp."""
    keys = np.stack([warps.astype(np.int64), granule_addresses.astype(np.int64)], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    merged = np.zeros(len(unique), dtype=np.uint8)
    np.bitwise_or.at(merged, inverse.reshape(-1), overlap.astype(np.uint8))
    return int(np.unpackbits(merged).sum())


# ---- init -------------------------------------------------------------------------------------------
