"""Small inline-SVG charts: horizontal bars, stacked bars against a limit, the memory plan."""
from __future__ import annotations

from html import escape

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac"]


def _fmt(n: float) -> str:
    return f"{n:,.0f}"


def bar_chart(rows: list[tuple[str, float]], unit: str, title: str) -> str:
    """One horizontal bar per row (label, value)."""
    width, label_w, bar_h, gap = 760, 220, 16, 4
    top = max([v for _, v in rows] + [1])
    height = 28 + len(rows) * (bar_h + gap)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for k, (label, value) in enumerate(rows):
        y = 20 + k * (bar_h + gap)
        w = (width - label_w - 120) * value / top
        parts.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end" font-size="11">{escape(label[:32])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[0]}"/>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" font-size="11">{_fmt(value)} {escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stacked_bar(segments: list[tuple[str, int]], limit: int, title: str) -> str:
    """Segments (label, bytes) stacked left to right, with the limit drawn as a line."""
    width, left, height = 760, 90, 54
    total = sum(v for _, v in segments)
    scale = (width - left - 20) / max(limit, total, 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 20}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
             f'<text x="0" y="24" font-size="12" font-weight="bold">{escape(title)}</text>']
    x: float = left
    for k, (label, value) in enumerate(segments):
        w = value * scale
        parts.append(f'<rect x="{x:.1f}" y="10" width="{w:.1f}" height="22" fill="{PALETTE[k % len(PALETTE)]}">'
                     f'<title>{escape(label)}: {_fmt(value)} B</title></rect>')
        x += w
    lx = left + limit * scale
    parts.append(f'<line x1="{lx:.1f}" y1="4" x2="{lx:.1f}" y2="38" stroke="#000" stroke-width="2"/>')
    parts.append(f'<text x="{min(lx, width - 150):.1f}" y="50" font-size="11">limit {_fmt(limit)} B</text>')
    legend = "; ".join(f"{label} {_fmt(v)} B" for label, v in segments)
    parts.append(f'<text x="{left}" y="{height + 14}" font-size="11">{escape(legend)} (total {_fmt(total)} B)</text>')
    parts.append("</svg>")
    return "".join(parts)


def memory_plan_chart(plan: dict, title: str) -> str:
    """Tensors as rectangles: x = operator steps they are live in, y = their arena addresses."""
    width, height, left, bottom = 760, 320, 70, 40
    steps = max(plan["steps"], 1)
    arena = max(plan["arena_bytes"], 1)
    sx = (width - left - 10) / steps
    sy = (height - bottom - 10) / arena
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
             f'<rect x="{left}" y="10" width="{width - left - 10}" height="{height - bottom - 10}" fill="#f7f7f7" '
             'stroke="#999"/>']
    for k, b in enumerate(plan["buffers"]):
        if b["offset"] is None:
            continue
        x = left + b["first_step"] * sx
        w = (b["last_step"] - b["first_step"] + 1) * sx
        y = height - bottom - (b["offset"] + b["bytes"]) * sy
        h = max(b["bytes"] * sy, 1)
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                     f'fill="{PALETTE[k % len(PALETTE)]}" fill-opacity="0.8" stroke="#333" stroke-width="0.5">'
                     f'<title>{escape(b["layer"])} output: {_fmt(b["bytes"])} B at {_fmt(b["offset"])}, '
                     f'steps {b["first_step"]}..{b["last_step"]}</title></rect>')
    parts.append(f'<text x="{left}" y="{height - 12}" font-size="11">operator step 0 .. {steps - 1} &#8594;</text>')
    parts.append(f'<text x="4" y="20" font-size="11">{_fmt(arena)} B</text>')
    parts.append(f'<text x="4" y="{height - bottom}" font-size="11">0</text>')
    parts.append("</svg>")
    return "".join(parts)
