"""Imports point downward only: grammars ← isa ← parse/lower ← machine ← front doors; lark stays in the parser."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB_OK = {"__future__", "dataclasses", "typing", "functools", "re", "math", "struct", "fractions", "decimal",
             "itertools", "pathlib", "os", "sys", "bisect", "warnings", "collections", "operator", "enum"}


def imports_of(path: Path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names.add("." + (node.module or ""))
            else:
                names.add(node.module.split(".")[0])
    return names


def modules(folder):
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", modules("isa"), ids=lambda p: p.name)
def test_isa_imports_numpy_and_itself_only(path):
    extra = imports_of(path) - STDLIB_OK - {"numpy", "isa"}
    assert not {name for name in extra if not name.startswith(".")}, extra


@pytest.mark.parametrize("path", modules("grammars"), ids=lambda p: p.name)
def test_grammars_are_text_only(path):
    assert imports_of(path) <= STDLIB_OK


@pytest.mark.parametrize("path", [p for p in modules("emulator") if p.name != "parse.py"], ids=lambda p: p.name)
def test_only_the_parser_imports_lark(path):
    assert "lark" not in imports_of(path)


@pytest.mark.parametrize("path", modules("emulator/memory"), ids=lambda p: p.name)
def test_memory_sits_below_the_machine(path):
    names = imports_of(path)
    assert not names & {"isa", "lark"} and not any(n in names for n in (".machine", ".lower", ".parse", "..machine",
                                                                         "..lower", "..parse", "..launch"))


@pytest.mark.parametrize("name", ["syntax.py", "ir.py", "lower.py"])
def test_ir_layers_do_not_reach_up_to_the_machine_or_front_doors(name):
    names = imports_of(ROOT / "emulator" / name)
    assert not names & {".machine", ".launch", ".cli", ".api", ".debugger", ".executors"}
