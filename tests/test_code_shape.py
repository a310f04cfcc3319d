"""No class in emulator/ or isa/ is longer than 400 lines (issue 16): a longer one is split into cohesive parts."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 400


def class_lengths(path: Path):
    """(class name, first line, lines from `class` to its last line) of every class in the file, nested ones too."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def test_class_lengths_count_from_class_to_its_last_line(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("x = 1\nclass A:\n    def f(self):\n        return 1\n\n    y = 2\nz = 3\n")
    assert list(class_lengths(source)) == [("A", 2, 5)]


def test_no_class_is_longer_than_400_lines():
    long = [f"{path.relative_to(ROOT)}:{line}: class {name} has {length} lines"
            for folder in ("emulator", "isa") for path in sorted((ROOT / folder).rglob("*.py"))
            for name, line, length in class_lengths(path) if length > MAX_CLASS_LINES]
    assert not long, "\n".join(long)
