"""Linking PTX modules into one, as a device linker would resolve them: what cuLinkComplete and numba's link step
hand gpuemu (it runs PTX, so the "linked image" is PTX).

Each module is split into its top-level statements. The result has one header (the highest .version, the first
.target, .address_size 64), then every module's statements in order, with:
  * every module's variables (and .file directives) first, so a variable is defined before any function uses it;
  * `.extern` declarations of a variable that a module defines dropped, those of a function kept as its prototype
    (with the definition's linkage: a call needs a prototype before it) unless the definition came before them
    (ptxas calls that a duplicate definition), repeated ones kept once;
  * a `.weak` definition kept once (the first), a second `.visible` definition of one name refused;
  * a name with internal linkage (no .visible/.weak/.extern) renamed in its module (`name` → `name$m2`) where
    another module defines it visibly or weakly, or an earlier one defines it too: each module keeps its own;
  * `.file` indices renumbered per module (and the `.loc` directives that use them).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from emulator.base.errors import UsageError

HEADER = re.compile(r"\.(version|target|address_size)\b")
LINE_DIRECTIVE = re.compile(r"\.(version|target|address_size|file)\b")
IDENTIFIER = r"[A-Za-z_$%][\w$]*"


@dataclass
class Statement:
    text: str
    kind: str  # header, file, function, variable, other
    name: Optional[str] = None
    linkage: str = ""  # extern, visible, weak, or "" (internal)
    defines: bool = False


def _strip_comments(text: str) -> str:
    """Comments blanked out (strings kept), so that braces and semicolons in them do not count."""
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/',
                  lambda match: match.group(0) if match.group(0).startswith('"') else
                  re.sub(r"[^\n]", " ", match.group(0)), text, flags=re.DOTALL)


def split_statements(text: str) -> List[str]:
    """The top-level statements of a PTX module: header directives (one line each), declarations ending in `;`,
    and definitions ending with their body's closing brace."""
    clean = _strip_comments(text)
    statements, start, depth, index = [], 0, 0, 0
    while index < len(clean):
        character = clean[index]
        if depth == 0 and character == "." and not clean[start:index].strip():
            match = LINE_DIRECTIVE.match(clean, index)
            if match:
                end = clean.find("\n", index)
                end = len(clean) if end < 0 else end
                statements.append(text[index:end].strip())
                start = index = end
                continue
        if character in "{(":
            depth += 1
        elif character in "})":
            depth -= 1
            if depth == 0 and character == "}" and not re.match(r"\s*[;,=]", clean[index + 1:index + 3]):
                statements.append(text[start:index + 1].strip())
                start = index + 1
        elif character == ";" and depth == 0:
            statements.append(text[start:index + 1].strip())
            start = index + 1
        index += 1
    if text[start:].strip():
        statements.append(text[start:].strip())
    return [statement for statement in statements if statement]


def classify(text: str) -> Statement:
    clean = _strip_comments(text)
    header = HEADER.match(clean)
    if header:
        return Statement(text, "header", header.group(1))
    if clean.startswith(".file"):
        return Statement(text, "file")
    words = clean.split()
    linkage = next((word[1:] for word in words[:3] if word in (".extern", ".visible", ".weak")), "")
    function = re.search(r"\.(?:func|entry)\b", clean)
    head = clean.split("{", 1)[0]
    if function and function.start() < len(head):
        rest = clean[function.end():].lstrip()
        if rest.startswith("("):
            rest = rest[_closing(rest) + 1:].lstrip()
        match = re.match(IDENTIFIER, rest)
        return Statement(text, "function", match.group(0) if match else None, linkage, "{" in clean)
    if re.search(r"\.(?:global|const|shared)\b", head):
        declarator = re.split(r"[\[=;]", head, 1)[0]
        names = [word for word in re.findall(IDENTIFIER, declarator) if not word.startswith("%")]
        return Statement(text, "variable", names[-1] if names else None, linkage, linkage != "extern")
    return Statement(text, "other")


def _closing(text: str) -> int:
    depth = 0
    for index, character in enumerate(text):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth == 0:
            return index
    return len(text) - 1


def _version(statement: Statement) -> Tuple[int, int]:
    match = re.search(r"(\d+)\.(\d+)", statement.text)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def link(modules: Sequence[str]) -> str:
    """One PTX module from several (UsageError when two define the same visible name)."""
    if not modules:
        raise UsageError("nothing to link: no PTX module was added")
    if len(modules) == 1:
        return modules[0]
    parsed = [[classify(text) for text in split_statements(module)] for module in modules]
    defined: Dict[str, int] = {}
    for number, statements in enumerate(parsed):
        for statement in statements:
            if statement.name is None or not statement.defines or statement.linkage != "visible":
                continue
            if statement.name in defined:
                raise UsageError(f"'{statement.name}' is defined in PTX module {defined[statement.name] + 1} and in "
                                 f"module {number + 1}")
            defined[statement.name] = number
    owners: Dict[str, List[Tuple[int, Statement]]] = {}
    for number, statements in enumerate(parsed):
        for statement in statements:
            if statement.name is not None and statement.defines and statement.linkage in ("weak", ""):
                owners.setdefault(statement.name, []).append((number, statement))
    weak = {name for name, found in owners.items() if any(s.linkage == "weak" for _, s in found)}
    versions = [_version(s) for statements in parsed for s in statements if s.kind == "header" and s.name == "version"]
    targets = [s.text for statements in parsed for s in statements if s.kind == "header" and s.name == "target"]
    out = [".version %d.%d" % max(versions) if versions else ".version 8.0", targets[0] if targets else ".target sm_90",
           ".address_size 64", ""]
    seen_externs, kept_weak, emitted, file_base = set(), set(), set(), 0
    body: List[str] = []
    for number, statements in enumerate(parsed):
        renames = {name: f"{name}$m{number + 1}" for name, found in owners.items()
                   if any(n == number and s.linkage == "" for n, s in found)
                   and (name in defined or any(n != number and s.linkage == "weak" for n, s in found)
                        or any(n < number for n, _ in found))}
        files = [int(m.group(1)) for s in statements if s.kind == "file" for m in [re.match(r"\.file\s+(\d+)", s.text)]
                 if m]
        for statement in statements:
            if statement.kind == "header":
                continue
            text = statement.text
            if statement.linkage == "extern" and statement.name is not None:
                resolved = statement.name in defined or statement.name in weak
                if statement.kind == "variable" and resolved or statement.name in seen_externs | emitted:
                    continue
                seen_externs.add(statement.name)
                if resolved:  # a call needs the prototype before it: kept, with the definition's linkage
                    text = re.sub(r"\.extern\b", ".visible" if statement.name in defined else ".weak", text, count=1)
            if statement.linkage == "weak" and statement.defines:
                if statement.name in kept_weak or statement.name in defined:
                    continue
                kept_weak.add(statement.name)
            for name, renamed in renames.items():
                text = re.sub(rf"(?<![\w$%]){re.escape(name)}(?![\w$])", renamed, text)
            if file_base:
                text = re.sub(r"(\.(?:file|loc)\s+)(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) + file_base}", text)
            if statement.kind == "function" and statement.defines and statement.linkage in ("visible", "weak"):
                emitted.add(statement.name)
            (out if statement.kind in ("variable", "file") else body).append(text)
        file_base += max(files, default=0)
    return "\n".join(out + body) + "\n"
