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


def test_a_root_module_that_is_not_listed_as_a_front_door_belongs_to_no_layer():
    assert layer_of("emulator.launching").is_front_door and layer_of("emulator").is_front_door
    assert layer_of("emulator.unlisted_tool") is None


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


#: compiled extension modules: an import of one names a .so beside the package, not the package itself
COMPILED_EXTENSIONS = {"emulator.memory._gpuemu_core", "emulator.accel._gpuemu_arith"}


def module_level_imports(path: Path):
    """Absolute module names the file imports when it is imported (its top-level statements, not its functions)."""
    current = module_name(path)
    package = current if path.name == "__init__.py" else current.rpartition(".")[0]
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module
            if node.level:
                base = package.split(".")
                module = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            yield from (f"{module}.{alias.name}" for alias in node.names)


def import_graph():
    """gpuemu module → the gpuemu modules its top-level imports load (an imported name resolves to its module)."""
    modules = {module_name(path): path for path in python_files("emulator", "isa")}

    def owner(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, path in modules.items():
        targets = {owner(imported) for imported in module_level_imports(path)
                   if not any(imported == ext or imported.startswith(ext + ".") for ext in COMPILED_EXTENSIONS)}
        graph[name] = {target for target in targets if target and target != name}
    return graph


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def package_of(module: str) -> str:
    """emulator's subpackage a module lives in (emulator.cli for emulator.cli.run); a root module is its own."""
    parts = module.split(".")
    if parts[0] != "emulator":
        return parts[0]
    return ".".join(parts[:2]) if len(parts) > 1 and (ROOT / "emulator" / parts[1]).is_dir() else module


def test_cycles_finds_a_loop_and_passes_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_module_imports_itself_through_others():
    assert cycles(import_graph()) == []


def test_no_package_imports_itself_through_others():
    packages = {}
    for module, targets in import_graph().items():
        packages.setdefault(package_of(module), set()).update(
            package_of(target) for target in targets if package_of(target) != package_of(module))
    assert cycles(packages) == []
