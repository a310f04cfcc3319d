"""SASS listings (cuobjdump -sass, Fermi to Hopper) run through the same IR, machine and memory as PTX."""
from __future__ import annotations

import re

_SASS_MARKERS = re.compile(r"^[ \t]*(?:code[ \t]+for[ \t]+sm_\w+|Function[ \t]*:|/\*[0-9a-fA-F]{4,}\*/)", re.MULTILINE)
_PTX_MARKERS = re.compile(r"^[ \t]*\.(?:version|entry|visible|func)\b", re.MULTILINE)


def looks_like_sass(text: str, source_name: str = "") -> bool:
    """A `.sass` file, or text with cuobjdump's `code for sm_XX` / `Function :` / `/*0000*/` markers."""
    if str(source_name).lower().endswith(".sass"):
        return True
    return bool(_SASS_MARKERS.search(text)) and not _PTX_MARKERS.search(text)
