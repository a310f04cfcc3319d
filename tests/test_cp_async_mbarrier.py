"""cp.async.mbarrier.arrive[.noinc]: an mbarrier tracks a thread's earlier cp.async copies (PTX ISA 8.x, 9.7.9.25.3.1):
once they complete it gets an arrive-on; without .noinc its pending count is raised by one first, so only the thread's
own mbarrier.arrive counts."""
import numpy as np
import pytest

from emulator.api import load

KERNEL = """.version 8.8
.target sm_90
.address_size 64
.visible .entry copy_then_wait(.param .u64 in, .param .u64 out, .param .u32 expected)
{{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	.shared .align 8 .b64 bar;
	.shared .align 4 .b32 tile[32];
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	ld.param.u32 %r1, [expected];
	mov.u32 %r2, %tid.x;
	setp.eq.u32 %p1, %r2, 0;
	@%p1 mbarrier.init.shared.b64 [bar], %r1;
	bar.sync 0;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd1, %rd3;
	mov.u32 %r3, tile;
	shl.b32 %r4, %r2, 2;
	add.u32 %r5, %r3, %r4;
	cp.async.ca.shared.global [%r5], [%rd4], 4;
	cp.async.mbarrier.arrive{noinc}.shared.b64 [bar];
	{arrive}
	mov.u32 %r6, 0;
WAIT:
	mbarrier.test_wait.parity.shared.b64 %p2, [bar], 0;
	@%p2 bra DONE;
	add.u32 %r6, %r6, 1;
	setp.lt.u32 %p1, %r6, 100;
	@%p1 bra WAIT;
DONE:
	selp.u32 %r7, 1, 0, %p2;
	xor.b32 %r4, %r2, 31;
	shl.b32 %r4, %r4, 2;
	add.u32 %r5, %r3, %r4;
	ld.shared.u32 %r3, [%r5];
	mul.wide.u32 %rd5, %r2, 8;
	add.s64 %rd6, %rd2, %rd5;
	st.global.v2.u32 [%rd6], {{%r7, %r3}};
	ret;
}}
"""


def run(noinc: bool, arrive: bool, expected: int):
    ptx = KERNEL.format(noinc=".noinc" if noinc else "",
                        arrive="mbarrier.arrive.shared.b64 %rd7, [bar];" if arrive else "")
    data = (np.arange(32, dtype=np.uint32) * 7 + 3)
    out = np.zeros((32, 2), np.uint32)
    load(ptx).kernel().launch(1, 32, [data, out, np.uint32(expected)])
    return out[:, 0], out[:, 1], data


@pytest.mark.parametrize("noinc, arrive", [(True, False), (False, True)])
def test_phase_completes_once_every_thread_counted_and_the_copies_are_visible(noinc, arrive):
    completed, read, data = run(noinc, arrive, 32)
    assert completed.tolist() == [1] * 32
    assert read.tolist() == data[::-1].tolist()


def test_without_noinc_the_async_arrive_alone_does_not_complete_the_phase():
    completed, _, _ = run(noinc=False, arrive=False, expected=32)
    assert completed.tolist() == [0] * 32


def test_noinc_counts_one_arrival_per_thread():
    completed, _, _ = run(noinc=True, arrive=False, expected=33)
    assert completed.tolist() == [0] * 32


def _state(expected, pending, transactions, phase):
    """The mbarrier object's word as the PTX ISA lays it out: expected and pending arrivals, tx-count, phase."""
    return expected | (pending << 21) | (transactions << 42) | (phase << 63)


def test_mbarrier_apply_completes_a_phase_after_the_expected_arrivals_and_transactions():
    from isa.tensor import mbarrier_apply
    word, _ = mbarrier_apply("init", 0, 2)
    assert word == _state(2, 2, 0, 0)
    word, old = mbarrier_apply("expect_tx", word, 16, expect_tx=True)
    assert (word, old) == (_state(2, 2, 16, 0), _state(2, 2, 0, 0))
    word, _ = mbarrier_apply("arrive", word)
    word, _ = mbarrier_apply("arrive", word)
    assert word == _state(2, 0, 16, 0)
    assert mbarrier_apply("test_wait", word, 0, parity=True) == (None, 0)
    word, _ = mbarrier_apply("complete_tx", word, 16)
    assert word == _state(2, 2, 0, 1)
    assert mbarrier_apply("try_wait", word, 0, parity=True) == (None, 1)
    assert mbarrier_apply("pending_count", word, _state(2, 1, 0, 0)) == (None, 1)
    word, _ = mbarrier_apply("arrive_drop", word, 1)
    assert word == _state(1, 1, 0, 1)
