"""PTX: text to syntax tree (parse.py, cached by cache.py) to IR program (lower.py)."""
