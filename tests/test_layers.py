"""Every import points down the layers that emulator/architecture.py names; lark stays in the parsers."""
import ast
from pathlib import Path

import pytest

from emulator.architecture import LAYERS, layer_of

ROOT = Path(__file__).resolve().parents[1]
STDLIB_OK = {"__future__", "dataclasses", "typing", "functools", "re", "math", "struct", "fractions", "decimal",
             "itertools", "pathlib", "os", "sys", "bisect", "warnings", "collections", "operator", "enum", "zlib",
             "lzma", "importlib"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path):
    """(line, absolute module name) of every import in the file, function-level ones included."""
    current = module_name(path)
    package = current if path.name == "__init__.py" else current.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"


def python_files(*folders):
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def _id(path):
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", python_files("emulator", "isa", "grammars"), ids=_id)
def test_imports_point_down_the_layers(path):
    mine = layer_of(module_name(path))
    wrong = []
    for line, module in imported_modules(path):
        theirs = layer_of(module)
        if theirs is None or theirs.name == mine.name:
            continue
        if theirs.rank >= mine.rank and not mine.is_front_door:
            wrong.append(f"line {line}: {mine.name} imports {module} ({theirs.name})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("path", python_files("isa"), ids=_id)
def test_isa_imports_numpy_and_itself_only(path):
    tops = {module.split(".")[0] for _, module in imported_modules(path)}
    assert tops <= STDLIB_OK | {"numpy", "isa"}, tops - STDLIB_OK


@pytest.mark.parametrize("path", python_files("grammars", "emulator/base"), ids=_id)
def test_bottom_layers_import_the_standard_library_only(path):
    tops = {module.split(".")[0] for _, module in imported_modules(path)}
    assert tops <= STDLIB_OK | {"hashlib", "hmac", "stat", "tempfile", "glob", "shutil", "emulator"}, tops
    assert all(layer_of(module).name == "base" for _, module in imported_modules(path)
               if module.startswith("emulator."))


@pytest.mark.parametrize("path", [p for p in python_files("emulator") if p.name != "parse.py"], ids=_id)
def test_only_the_parsers_import_lark(path):
    assert not any(module.split(".")[0] == "lark" for _, module in imported_modules(path))


def test_every_module_belongs_to_a_layer():
    unplaced = [_id(path) for path in python_files("emulator", "isa", "grammars")
                if layer_of(module_name(path)) is None]
    assert not unplaced


def test_layers_are_ranked_bottom_up_without_gaps():
    assert sorted({layer.rank for layer in LAYERS}) == list(range(max(layer.rank for layer in LAYERS) + 1))


def test_observers_never_import_a_front_door():
    for path in python_files("emulator/observers"):
        doors = [module for _, module in imported_modules(path) if (layer_of(module) or LAYERS[0]).is_front_door]
        assert not doors, (_id(path), doors)


def test_architecture_doc_draws_the_layers_the_code_has():
    """docs/architecture.md's diagram is tools/architecture.py's drawing of today's imports (--write redraws it)."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "architecture.py"), "--check"], cwd=ROOT)
    assert result.returncode == 0, "run: python tools/architecture.py --write"
