"""The tables that bind instructions to their semantics refuse, with a real exception, an entry left without."""
import dataclasses

import pytest

import isa.sass
import isa.table
from emulator.machine import sass as machine_sass
from emulator.machine.registry import RegistryError
from emulator.memory import fallback


def test_a_sass_op_without_a_doc_is_refused(monkeypatch):
    broken = dataclasses.replace(isa.sass.OPS["IADD3"], doc="")
    monkeypatch.setitem(isa.sass.OPS, "IADD3", broken)
    with pytest.raises(isa.sass.SassTableError, match="IADD3: needs a one-line doc"):
        isa.sass._check_ops()


def test_a_sass_op_without_semantics_is_refused(monkeypatch):
    broken = dataclasses.replace(isa.sass.OPS["FADD"], semantics=None)
    monkeypatch.setitem(isa.sass.OPS, "FADD", broken)
    with pytest.raises(isa.sass.SassTableError, match="FADD: semantics None"):
        isa.sass._check_ops()


def test_a_sass_plan_kind_without_a_builder_is_refused(monkeypatch):
    monkeypatch.delitem(machine_sass.BUILDERS, "vote")
    with pytest.raises(RegistryError, match="without a builder: \\['vote'\\]"):
        machine_sass._check_builders()


def test_the_memory_core_refuses_atomic_semantics_other_than_isa_atomic_combine(monkeypatch):
    monkeypatch.setattr(fallback, "semantics", lambda decoded: (lambda old, a, b=None: a))
    with pytest.raises(isa.table.TableError, match="atom semantics"):
        fallback._check_atomic_semantics()
