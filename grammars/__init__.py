"""Grammar texts (lark) for PTX and SASS listings."""
from pathlib import Path

GRAMMAR_DIR = Path(__file__).resolve().parent


def grammar_text(name: str) -> str:
    """Return the text of grammars/<name>.lark."""
    return (GRAMMAR_DIR / f"{name}.lark").read_text()
