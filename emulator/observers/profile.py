"""`gpuemu profile`: a kernel's PTX (and CUDA source from .loc) annotated line by line with exact memory counters, worst lines flagged; `--html` writes one self-contained page."""
from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from emulator.base.sources import SourceFiles
from emulator.base.text import printable
from emulator.memory import phase_lanes
from emulator.runtime.faults import source_text
from emulator.observers.stats import IDEAL, TRANSACTIONS, MemoryStats, format_number, format_table

#: how kinds are labelled in the listing's narrow column
SHORT_KIND = {"shared_load": "sh.ld", "shared_store": "sh.st", "shared_atomic": "sh.atom",
              "global_load": "gl.ld", "global_store": "gl.st", "global_atomic": "gl.atom",
              "local_load": "lo.ld", "local_store": "lo.st", "constant_load": "const",
              "param_load": "param"}


@dataclass
class LineReport:
    """One PTX line of the listing, with its counters when it holds instructions."""
    line: int
    text: str
    pcs: List[int] = field(default_factory=list)
    counters: Optional[dict] = None
    kinds: List[str] = field(default_factory=list)
    excess: int = 0
    rank: Optional[int] = None
    source: Optional[Tuple[str, int]] = None   # the user's line (the outermost call of inlined code)
    inlined: Optional[str] = None              # `file:line, inlined: …` where the line's code was inlined

    @property
    def memory(self) -> Optional[dict]:
        """The line's memory columns (label, requests, transactions, per_request, ideal_per_request,
        conflicts, efficiency, unit), summed over the access kinds it made; None for other lines."""
        kinds = [kind for kind in self.kinds if kind != "param_load"] or self.kinds
        if not kinds or self.counters is None:
            return None
        counters = self.counters
        requests = transactions = conflicts = 0
        efficiency = None
        for kind in kinds:
            requests += counters[f"{kind}_requests"]
            for unit in ("transactions", "sectors"):
                transactions += counters.get(f"{kind}_{unit}", 0)
            conflicts += counters.get(f"{kind}_bank_conflicts", 0)
            for name in ("gld_efficiency", "gst_efficiency", "local_load_efficiency", "local_store_efficiency"):
                if name in counters and counters[name] is not None:
                    efficiency = counters[name]
        label = "+".join(SHORT_KIND[kind] for kind in kinds)
        if kinds == ["param_load"]:
            return {"label": label, "requests": requests, "transactions": None, "per_request": None,
                    "ideal_per_request": None, "conflicts": None, "efficiency": None, "unit": "requests"}
        shared = any(kind.startswith("shared") for kind in kinds)
        return {"label": label, "requests": requests, "transactions": transactions,
                "per_request": transactions / requests if requests else None,
                "ideal_per_request": (transactions - self.excess) / requests if requests else None,
                "conflicts": conflicts if shared else None, "efficiency": efficiency,
                "unit": "wavefronts" if shared else "distinct addresses" if kinds == ["constant_load"] else
                "sectors"}


@dataclass
class SourceLine:
    """A CUDA source line shown above the PTX it became."""
    file: str
    line: int
    text: Optional[str]


class Profile:
    """The annotated listing of one profiled launch."""

    def __init__(self, stats: MemoryStats, ptx_path: str, top: int = 5, source_dirs: Sequence[str] = ()):
        self.stats = stats
        self.program = stats.program
        self.ptx_path = ptx_path
        self.kernel_counters = stats.kernel_counters()
        self.sources = SourceFiles(ptx_path, source_dirs)
        self.rows: List[object] = []
        self.lines: Dict[int, LineReport] = {}
        self._build()
        ranked = sorted((report for report in self.lines.values() if report.excess > 0),
                        key=lambda report: (-report.excess, report.line))[:top]
        for rank, report in enumerate(ranked, 1):
            report.rank = rank
        self.worst: List[LineReport] = ranked

    # ---- building ----
    def _spans(self) -> List[Tuple[int, int]]:
        lines = self.program.lines
        by_function: Dict[str, List[int]] = {}
        for instr in self.program.instrs:
            by_function.setdefault(instr.function, []).append(instr.line)
        spans = []
        for numbers in by_function.values():
            first, last = min(numbers), max(numbers)
            start = first
            while start > 1 and not any(word in lines[start - 1].split() for word in (".entry", ".func")):
                start -= 1
            end = last
            while end < len(lines) and lines[end - 1].strip() != "}":
                end += 1
            spans.append((start, end))
        return sorted(spans)

    def _build(self) -> None:
        stats, lines = self.stats, self.program.lines
        by_line = stats.lines()
        line_counters = stats.line_counters()
        shown_source = None
        for start, end in self._spans():
            for number in range(start, end + 1):
                text = lines[number - 1].rstrip() if number <= len(lines) else ""
                stripped = text.strip()
                if not stripped or stripped.startswith((".loc", ".file")):
                    continue
                pcs = by_line.get(number, [])
                report = LineReport(number, printable(text).expandtabs(8))
                if pcs:
                    report.pcs = pcs
                    report.counters = line_counters[number]
                    report.kinds = stats.kinds_of(pcs)
                    report.excess = stats.excess(pcs)
                    report.source = self.program.instrs[pcs[0]].user_source
                    report.inlined = source_text(self.program.instrs[pcs[0]])
                    if report.source is not None and report.source != shown_source:
                        shown_source = report.source
                        self.rows.append(SourceLine(report.source[0], report.source[1],
                                                    self.sources.line(*report.source)))
                self.lines[number] = report
                self.rows.append(report)

    # ---- the worst shared-memory instruction, for the heat maps ----
    def worst_shared_pc(self) -> Optional[int]:
        """The shared-memory instruction with the most bank conflicts (or the first one), if it was sampled."""
        candidates = []
        for (pc, kind), slot in self.stats.access.items():
            if kind.startswith("shared") and pc in self.stats.shared_samples:
                candidates.append((-(slot[TRANSACTIONS] - slot[IDEAL]), pc))
        return min(candidates)[1] if candidates else None

    def bank_matrix(self, pc: int):
        """(warps, lanes×banks matrix of the worst warp, warps×banks matrix, wavefronts per warp) of the
        first request each warp of block 0 made at pc; cells count distinct bank words."""
        samples = self.stats.shared_samples[pc]
        bank_bytes = self.stats.bank_bytes
        warps = sorted(samples)
        per_warp = np.zeros((len(warps), 32), dtype=np.int64)
        wavefronts = np.zeros(len(warps), dtype=np.int64)
        lane_views = []
        for row, warp in enumerate(warps):
            lanes, addresses, width = samples[warp]
            cells, waves, lane_cells = bank_picture(lanes, addresses, width, bank_bytes)
            per_warp[row] = cells
            wavefronts[row] = waves
            lane_views.append(lane_cells)
        worst_row = int(np.argmax(wavefronts))
        return warps, worst_row, lane_views[worst_row], per_warp, wavefronts


def bank_picture(lanes: np.ndarray, addresses: np.ndarray, width: int, bank_bytes: int):
    """For one warp's request: distinct words per bank (max over phases), the wavefront count,
    and a 32×32 lane×bank matrix holding the bank's distinct-word count where a lane touches it."""
    lanes_per_phase = phase_lanes(width, bank_bytes)
    words_per_lane = (addresses % bank_bytes + width - 1) // bank_bytes + 1
    cells = np.zeros(32, dtype=np.int64)
    wavefronts = 0
    lane_cells = np.zeros((32, 32), dtype=np.int64)
    touched = []
    for phase in np.unique(lanes // lanes_per_phase):
        in_phase = (lanes // lanes_per_phase) == phase
        words = set()
        for address, count in zip(addresses[in_phase].tolist(), words_per_lane[in_phase].tolist()):
            words.update(address // bank_bytes + k for k in range(int(count)))
        per_bank = np.zeros(32, dtype=np.int64)
        for word in words:
            per_bank[word % 32] += 1
        wavefronts += int(per_bank.max()) if words else 0
        cells = np.maximum(cells, per_bank)
        for lane, address, count in zip(lanes[in_phase].tolist(), addresses[in_phase].tolist(),
                                        words_per_lane[in_phase].tolist()):
            for k in range(int(count)):
                bank = (address // bank_bytes + k) % 32
                touched.append((lane, bank, per_bank[bank]))
    for lane, bank, degree in touched:
        lane_cells[lane, bank] = max(lane_cells[lane, bank], degree)
    return cells, wavefronts, lane_cells


# ---- text ----

def _cell(value, digits: int = 2) -> str:
    return format_number(value, digits, missing="")


def render_text(profile: Profile, title: str) -> str:
    header = (f"{'line':>6} {'warps':>9} {'lanes':>6} {'mem':>8} {'requests':>9} {'tx/req':>7} {'conflicts':>9} "
              f"{'eff':>6}  ")
    out = [title, "", header + "PTX", "-" * (len(header) + 40)]
    for row in profile.rows:
        if isinstance(row, SourceLine):
            text = row.text if row.text is not None else ""
            out.append(f"{'':>{len(header) - 2}}  // {printable(row.file)}:{row.line}  {printable(text)}".rstrip())
            continue
        counters = row.counters
        if counters is None:
            out.append(f"{row.line:>6} {'':{len(header) - 7}}{row.text}".rstrip())
            continue
        memory = row.memory
        warps = counters["warp_instructions"]
        lanes = counters["thread_instructions"] / warps if warps else None
        cells = [f"{row.line:>6}", f"{warps:>9,}", f"{_cell(lanes, 1):>6}"]
        if memory is not None:
            efficiency = memory["efficiency"]
            cells += [f"{memory['label']:>8}", f"{memory['requests']:>9,}", f"{_cell(memory['per_request']):>7}",
                      f"{_cell(memory['conflicts']):>9}",
                      f"{'' if efficiency is None else f'{efficiency:.0f}%':>6}"]
        else:
            cells += [f"{'':>8}", f"{'':>9}", f"{'':>7}", f"{'':>9}", f"{'':>6}"]
        flag = f"   <<< worst #{row.rank}" if row.rank else ""
        out.append(" ".join(cells) + "  " + row.text.strip() + flag)
    out.append("")
    out.append(format_table(profile.kernel_counters, "kernel totals:"))
    out.append("")
    if profile.worst:
        out.append("worst lines (transactions beyond the ideal):")
        for report in profile.worst:
            out.append(f"  #{report.rank} {describe_worst(report, profile.ptx_path)}")
    else:
        out.append("no line moved more than it needed: no bank conflicts, no extra sectors, no constant serialisation")
    return "\n".join(out)


def describe_worst(report: LineReport, ptx_path: str) -> str:
    memory = report.memory
    where = f"{os.path.basename(ptx_path)}:{report.line}"
    if report.source is not None:
        where += f" ({printable(report.inlined or f'{report.source[0]}:{report.source[1]}')})"
    what = f"`{report.text.strip()}`"
    if memory is None:
        return f"{where} {what}: {report.excess:,} extra transactions"
    detail = (f"{memory['per_request']:.2f} {memory['unit']} per request where {memory['ideal_per_request']:.2f} "
              f"would do")
    if memory["conflicts"]:
        detail += f": {memory['conflicts']:,} bank conflicts"
    elif memory["unit"] == "sectors":
        detail += f": {report.excess:,} extra sectors"
        if memory["efficiency"] is not None:
            detail += f", efficiency {memory['efficiency']:.1f}%"
    else:
        detail += f": {report.excess:,} extra {memory['unit']}"
    for kind in report.kinds:
        if kind.endswith("atomic") and report.counters.get(f"{kind}_contention") is not None:
            detail += (f"; {report.counters[f'{kind}_contention']:.2f} lanes on a request's busiest address "
                       f"on average, at most {report.counters[f'{kind}_max_contention']}")
    return f"{where} {what}: {detail}"


# ---- HTML ----

SPACE_COLOURS = {"shared": "#d95f02", "global": "#1b9e77", "local": "#7570b3", "constant": "#e7298a",
                 "param": "#999999"}
PAGE_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px 0; } h2 { font-size: 16px; margin: 28px 0 8px 0; }
p.meta, p.note { color: #555; margin: 4px 0; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; }
table.summary td, table.summary th { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }
table.summary td:first-child, table.summary th:first-child { text-align: left; }
table.listing { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; width: 100%; }
table.listing td, table.listing th { padding: 1px 8px; white-space: pre; text-align: right; vertical-align: top; }
table.listing th { border-bottom: 1px solid #999; position: sticky; top: 0; background: #fff; }
table.listing td.code, table.listing th.code { text-align: left; width: 100%; }
tr.cuda td { color: #2a5db0; font-style: italic; background: #f3f6fb; }
tr.worst td.code { font-weight: bold; }
span.badge { background: #b2182b; color: #fff; border-radius: 3px; padding: 0 5px; margin-left: 10px;
             font-style: normal; font-weight: bold; }
ol.worst li { margin: 3px 0; font-size: 13px; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
div.figures { display: flex; flex-wrap: wrap; gap: 32px; align-items: flex-start; }
figure { margin: 0; max-width: 560px; } figcaption { font-size: 12px; color: #555; margin-top: 4px; }
svg text { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 10px; fill: #333; }
"""


def _space_of(label_kind: str) -> str:
    return label_kind.split("_")[0]


def _heat(fraction: float, darkest: float = 1.0) -> str:
    """White to dark red (darkest < 1 stops short of it, for rows that carry text)."""
    fraction = min(max(fraction, 0.0), 1.0) * darkest
    red = 255 - int(75 * fraction)
    other = 255 - int(230 * fraction)
    return f"#{red:02x}{other:02x}{other:02x}"


def _summary_table(counters: dict) -> str:
    rows = []
    for kind in ("shared_load", "shared_store", "shared_atomic", "global_load", "global_store", "global_atomic",
                 "local_load", "local_store", "constant_load", "param_load"):
        requests = counters.get(f"{kind}_requests", 0)
        if not requests:
            continue
        unit = "transactions" if kind.startswith(("shared", "constant")) else "sectors"
        transactions = counters.get(f"{kind}_{unit}")
        per_request = counters.get(f"{kind}_{unit}_per_request")
        conflicts = counters.get(f"{kind}_bank_conflicts")
        efficiency = next((counters[name] for name in ("gld_efficiency", "gst_efficiency", "local_load_efficiency",
                                                        "local_store_efficiency")
                           if name.startswith({"global_load": "gld", "global_store": "gst",
                                                "local_load": "local_load", "local_store": "local_store"}
                                              .get(kind, "-")) and counters.get(name) is not None), None)
        rows.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in (
            kind.replace("_", " "), f"{requests:,}", _cell(transactions) or "-", _cell(per_request) or "-",
            _cell(conflicts) or "-", "-" if efficiency is None else f"{efficiency:.1f}%")) + "</tr>")
    head = ("<tr><th></th><th>requests</th><th>transactions / sectors</th><th>per request</th>"
            "<th>bank conflicts</th><th>efficiency</th></tr>")
    wee = counters["warp_execution_efficiency"]
    branch_efficiency = counters["branch_efficiency"]
    facts = (f"{counters['warp_instructions']:,} warp instructions, {counters['thread_instructions']:,} thread "
             f"instructions; warp execution efficiency {'-' if wee is None else f'{wee:.1f}%'}; "
             f"{counters['branches']:,} branches ({counters['divergent_branches']:,} divergent, efficiency "
             f"{'-' if branch_efficiency is None else f'{branch_efficiency:.1f}%'}); {counters['barriers']:,} barriers")
    return (f"<table class=\"summary\">{head}{''.join(rows)}</table>"
            f"<p class=\"meta\">{html.escape(facts)}</p>")


#: the width of a character of the charts' 10px monospace labels, in pixels (a little over the real ~6.0)
CHAR_WIDTH = 6.5


def nice_ticks(peak: float, most: int = 5) -> Tuple[List[float], float]:
    """Axis ticks from 0 at a round step (1, 2, 2.5 or 5 times a power of ten) up to the first tick at or above
    peak, at most `most` of them; (ticks, top of the axis)."""
    peak = max(float(peak), 1e-12)
    raw = peak / (most - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(power * factor for factor in (1, 2, 2.5, 5, 10) if power * factor >= raw)
    count = math.ceil(peak / step - 1e-9)
    ticks = [round(step * index, 12) for index in range(count + 1)]
    return ticks, ticks[-1]


def tick_label(value: float) -> str:
    """A tick value with no trailing zeros and at most three significant digits after the point: 0, 0.25, 1.5,
    32, 12500."""
    if float(value).is_integer() and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.3g}"


def _text_width(text: str) -> float:
    return CHAR_WIDTH * len(text)


def _bar_chart(profile: Profile) -> str:
    bars = []
    for row in profile.rows:
        if isinstance(row, LineReport) and row.memory is not None and row.memory["requests"] \
                and row.kinds != ["param_load"]:
            bars.append(row)
    if not bars:
        return "<p class=\"note\">No memory requests.</p>"
    slot, height, top, bottom = 34, 180, 18, 46
    ticks, peak = nice_ticks(max(max(row.memory["per_request"], 1.0) for row in bars))
    labels = [tick_label(tick) for tick in ticks]
    left = math.ceil(max(_text_width(label) for label in labels) + 14)
    widest = max(_text_width(str(row.line)) for row in bars)
    widest = max([widest] + [_text_width(row.memory["label"]) for row in bars])
    right = max(10, math.ceil(widest / 2 - (slot - 10) / 2 + 4))
    width = max(left + slot * len(bars) + right, 420)
    parts = [f"<svg width=\"{width}\" height=\"{top + height + bottom}\" role=\"img\" "
             f"aria-label=\"transactions per request by line\">"]
    for tick, label in zip(ticks, labels):
        y = top + height - height * tick / peak
        parts.append(f"<line x1=\"{left - 4}\" y1=\"{y:.1f}\" x2=\"{width - 6}\" y2=\"{y:.1f}\" stroke=\"#e5e5e5\"/>"
                     f"<text x=\"{left - 6}\" y=\"{y + 3:.1f}\" text-anchor=\"end\">{label}</text>")
    for index, row in enumerate(bars):
        memory = row.memory
        x = left + index * slot + 5
        value = memory["per_request"]
        bar = height * value / peak
        colour = SPACE_COLOURS.get(_space_of(row.kinds[0]), "#888")
        tooltip = html.escape(f"line {row.line} {row.text.strip()}: {value:.2f} {memory['unit']} per request")
        parts.append(f"<g><title>{tooltip}</title><rect x=\"{x}\" y=\"{top + height - bar:.1f}\" "
                     f"width=\"{slot - 10}\" height=\"{max(bar, 1):.1f}\" fill=\"{colour}\"/></g>")
        ideal = memory["ideal_per_request"]
        if ideal is not None:
            y = top + height - height * ideal / peak
            parts.append(f"<line x1=\"{x - 2}\" y1=\"{y:.1f}\" x2=\"{x + slot - 8}\" y2=\"{y:.1f}\" stroke=\"#000\" "
                         f"stroke-width=\"2\" stroke-dasharray=\"3,2\"/>")
        parts.append(f"<text x=\"{x + (slot - 10) / 2:.1f}\" y=\"{top + height - bar - 4:.1f}\" "
                     f"text-anchor=\"middle\">{value:.3g}</text>")
        label_y = top + height + 12
        parts.append(f"<text x=\"{x + (slot - 10) / 2:.1f}\" y=\"{label_y}\" text-anchor=\"middle\">{row.line}</text>"
                     f"<text x=\"{x + (slot - 10) / 2:.1f}\" y=\"{label_y + 12}\" text-anchor=\"middle\">"
                     f"{html.escape(memory['label'])}</text>")
    legend_x = left
    for space, colour in SPACE_COLOURS.items():
        if space == "param":
            continue
        parts.append(f"<rect x=\"{legend_x}\" y=\"{top + height + 32}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>"
                     f"<text x=\"{legend_x + 14}\" y=\"{top + height + 41}\">{space}</text>")
        legend_x += 80
    parts.append("</svg>")
    return "".join(parts)


def _grid_svg(matrix: np.ndarray, row_labels: List[str], column_title: str, peak: int,
              right_labels: Optional[List[str]] = None) -> str:
    rows, columns = matrix.shape
    cell, top = 12, 30
    left = max(56, math.ceil(max(_text_width(label) for label in row_labels) + 10))
    right = math.ceil(max(_text_width(label) for label in right_labels) + 12) if right_labels else 10
    width, height = left + columns * cell + right, top + rows * cell + 8
    parts = [f"<svg width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"{html.escape(column_title)}\">",
             f"<text x=\"{left}\" y=\"11\">{html.escape(column_title)}</text>"]
    for column in range(0, columns, 4):
        parts.append(f"<text x=\"{left + column * cell + cell / 2:.1f}\" y=\"{top - 5}\" "
                     f"text-anchor=\"middle\">{column}</text>")
    for row in range(rows):
        y = top + row * cell
        parts.append(f"<text x=\"{left - 6}\" y=\"{y + cell - 4}\" text-anchor=\"end\">{html.escape(row_labels[row])}</text>")
        for column in range(columns):
            value = int(matrix[row, column])
            fill = _heat(value / peak) if value else "#f7f7f7"
            parts.append(f"<rect x=\"{left + column * cell}\" y=\"{y}\" width=\"{cell - 1}\" height=\"{cell - 1}\" "
                         f"fill=\"{fill}\"><title>{html.escape(row_labels[row])}, bank {column}: {value}</title></rect>")
            if value > 1:
                colour = "#fff" if value / peak > 0.55 else "#333"
                parts.append(f"<text x=\"{left + column * cell + (cell - 1) / 2:.1f}\" y=\"{y + cell - 4}\" "
                             f"text-anchor=\"middle\" style=\"fill:{colour};font-size:7px\">{value}</text>")
        if right_labels:
            parts.append(f"<text x=\"{left + columns * cell + 6}\" y=\"{y + cell - 4}\">"
                         f"{html.escape(right_labels[row])}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _heat_maps(profile: Profile) -> str:
    pc = profile.worst_shared_pc()
    if pc is None:
        return "<p class=\"note\">The kernel makes no shared-memory requests.</p>"
    instr = profile.program.instrs[pc]
    warps, worst_row, lane_cells, per_warp, wavefronts = profile.bank_matrix(pc)
    peak = max(int(per_warp.max()), 1)
    one = _grid_svg(lane_cells, [f"lane {lane}" for lane in range(32)], "bank →", peak)
    every = _grid_svg(per_warp, [f"warp {warp}" for warp in warps], "bank →", peak,
                      [f"{count} wavefront{'s' if count != 1 else ''}" for count in wavefronts])
    where = f"line {instr.line}" + (f" ({source_text(instr)})" if instr.source else "")
    bank_bytes = profile.stats.bank_bytes
    return (f"<p class=\"meta\">Worst shared-memory instruction: {html.escape(where)} "
            f"<code>{html.escape(instr.text)}</code>; {bank_bytes}-byte banks.</p>"
            f"<div class=\"figures\"><figure>{one}<figcaption>One request: warp {warps[worst_row]} of block (0,0,0). "
            f"A cell is filled where a lane touches a bank; its number is how many distinct {bank_bytes}-byte words "
            f"that bank must deliver in the lane's phase, so the darkest column sets how many wavefronts "
            f"({int(wavefronts[worst_row])}) the request takes.</figcaption></figure>"
            f"<figure>{every}<figcaption>Every warp of block (0,0,0), its first request at this instruction: distinct "
            f"words per bank (lanes reading the same word are served by one broadcast).</figcaption></figure></div>")


def _listing_table(profile: Profile) -> str:
    peak_excess = max((row.excess for row in profile.lines.values()), default=0) or 1
    out = ["<table class=\"listing\"><tr><th>line</th><th>warps</th><th>lanes</th><th>mem</th><th>requests</th>"
           "<th>tx/req</th><th>conflicts</th><th>eff</th><th class=\"code\">PTX / CUDA</th></tr>"]
    for row in profile.rows:
        if isinstance(row, SourceLine):
            text = printable(f"{row.file}:{row.line}  {row.text or ''}")
            out.append(f"<tr class=\"cuda\"><td colspan=\"8\"></td><td class=\"code\">{html.escape(text)}</td></tr>")
            continue
        code = html.escape(row.text.strip() if row.counters is not None else row.text)
        if row.counters is None:
            out.append(f"<tr><td>{row.line}</td><td colspan=\"7\"></td><td class=\"code\">{code}</td></tr>")
            continue
        counters, memory = row.counters, row.memory
        warps = counters["warp_instructions"]
        lanes = _cell(counters["thread_instructions"] / warps, 1) if warps else ""
        cells = [str(row.line), f"{warps:,}", lanes]
        if memory is not None:
            efficiency = memory["efficiency"]
            cells += [memory["label"], f"{memory['requests']:,}", _cell(memory["per_request"]),
                      _cell(memory["conflicts"]), "" if efficiency is None else f"{efficiency:.0f}%"]
        else:
            cells += [""] * 5
        style = f" style=\"background:{_heat(row.excess / peak_excess, 0.35)}\"" if row.excess else ""
        badge = f"<span class=\"badge\">worst #{row.rank}</span>" if row.rank else ""
        klass = " class=\"worst\"" if row.rank else ""
        out.append(f"<tr{klass}{style}>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) +
                   f"<td class=\"code\">{code}{badge}</td></tr>")
    out.append("</table>")
    return "".join(out)


def render_html(profile: Profile, title: str, name: str) -> str:
    """One self-contained page: summary, worst lines, heat maps, bar chart and the annotated listing."""
    worst = "".join(f"<li>{html.escape(describe_worst(report, profile.ptx_path))}</li>" for report in profile.worst)
    worst_html = f"<ol class=\"worst\">{worst}</ol>" if worst else \
        "<p class=\"note\">No line moved more than it needed.</p>"
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>gpuemu profile: {html.escape(name)}</title><style>{PAGE_STYLE}</style></head><body>"
        f"<h1>gpuemu profile: {html.escape(name)}</h1><p class=\"meta\">{html.escape(title)}</p>"
        f"<h2>Kernel totals</h2>{_summary_table(profile.kernel_counters)}"
        f"<h2>Worst lines</h2>{worst_html}"
        f"<h2>Shared-memory banks</h2>{_heat_maps(profile)}"
        "<h2>Transactions per request by line</h2>"
        "<p class=\"meta\">Bars: wavefronts (shared), 32-byte sectors (global, local) or distinct addresses "
        "(constant) per warp request; dashed line: what the same lanes would need without conflicts or "
        "scattered sectors.</p>"
        f"{_bar_chart(profile)}"
        f"<h2>Annotated listing</h2>{_listing_table(profile)}"
        "</body></html>\n")
