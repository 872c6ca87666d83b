"""Small inline-SVG charts: horizontal bars, stacked bars against a limit, the memory plan."""

from __future__ import annotations

from html import escape

from microcompiler.analysis.memory_plan import live_bytes

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]


def _fmt(n: float) -> str:
    return f"{n:,.0f}"


def bar_chart(rows: list[tuple[str, float]], unit: str, title: str) -> str:
    """One horizontal bar per row (label, value)."""
    width, label_w, bar_h, gap = 760, 220, 16, 4
    top = max([v for _, v in rows] + [1])
    height = 28 + len(rows) * (bar_h + gap)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for k, (label, value) in enumerate(rows):
        y = 20 + k * (bar_h + gap)
        w = (width - label_w - 120) * value / top
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end" font-size="11">{escape(label[:32])}</text>'
        )
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[0]}"/>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" font-size="11">{_fmt(value)} {escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stacked_bar(segments: list[tuple[str, int]], limit: int, title: str) -> str:
    """Segments (label, bytes) stacked left to right, with the limit drawn as a line."""
    width, left, height = 760, 90, 54
    total = sum(v for _, v in segments)
    scale = (width - left - 20) / max(limit, total, 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 20}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<text x="0" y="24" font-size="12" font-weight="bold">{escape(title)}</text>',
    ]
    x: float = left
    for k, (label, value) in enumerate(segments):
        w = value * scale
        parts.append(
            f'<rect x="{x:.1f}" y="10" width="{w:.1f}" height="22" fill="{PALETTE[k % len(PALETTE)]}">'
            f"<title>{escape(label)}: {_fmt(value)} B</title></rect>"
        )
        x += w
    lx = left + limit * scale
    parts.append(f'<line x1="{lx:.1f}" y1="4" x2="{lx:.1f}" y2="38" stroke="#000" stroke-width="2"/>')
    parts.append(f'<text x="{min(lx, width - 150):.1f}" y="50" font-size="11">limit {_fmt(limit)} B</text>')
    legend = "; ".join(f"{label} {_fmt(v)} B" for label, v in segments)
    parts.append(f'<text x="{left}" y="{height + 14}" font-size="11">{escape(legend)} (total {_fmt(total)} B)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _short(name: str, width_px: float, font_px: float = 10) -> str | None:
    """``name`` cut to what fits in ``width_px`` (about 0.6 em a character), or None when not even 3 do."""
    chars = int(width_px / (0.6 * font_px))
    if chars < 3:
        return None
    return name if len(name) <= chars else name[: chars - 1] + "\u2026"


def memory_plan_chart(plan: dict, title: str) -> str:
    """Tensors as rectangles (x = operator steps they are live in, y = their arena addresses), each
    labelled with its layer's short name where it fits; the bytes live at each step drawn over them as
    a curve, and the layer-by-layer lower bound (the largest live set) as a dashed line."""
    width, height, left, bottom, right = 760, 320, 70, 40, 10
    steps = max(plan["steps"], 1)
    live = live_bytes(plan)
    bound = plan.get("lower_bound_bytes", max(live, default=0))
    top = max([plan["arena_bytes"], bound, *live, 1])
    sx = (width - left - right) / steps
    sy = (height - bottom - 10) / top
    base = height - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<rect x="{left}" y="10" width="{width - left - right}" height="{height - bottom - 10}" fill="#f7f7f7" '
        'stroke="#999"/>',
    ]
    labels = []
    for k, b in enumerate(plan["buffers"]):
        if b["offset"] is None:
            continue
        x = left + b["first_step"] * sx
        w = (b["last_step"] - b["first_step"] + 1) * sx
        y = base - (b["offset"] + b["bytes"]) * sy
        h = max(b["bytes"] * sy, 1)
        parts.append(
            f'<rect class="buffer" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'fill="{PALETTE[k % len(PALETTE)]}" fill-opacity="0.8" stroke="#333" stroke-width="0.5">'
            f"<title>{escape(b['layer'])} output: {_fmt(b['bytes'])} B at {_fmt(b['offset'])}, "
            f"steps {b['first_step']}..{b['last_step']}</title></rect>"
        )
        text = _short(b["layer"], w - 4)
        if text is not None and h >= 11:
            labels.append(
                f'<text class="buffer-label" x="{x + 2:.1f}" y="{y + min(h, 20) / 2 + 4:.1f}" '
                f'font-size="10" clip-path="none">{escape(text)}</text>'
            )
    parts.extend(labels)  # over every rectangle, not under the next one
    if live:
        points = []
        for s, v in enumerate(live):  # a step function: flat over each operator step
            y = base - v * sy
            points += [f"{left + s * sx:.1f},{y:.1f}", f"{left + (s + 1) * sx:.1f},{y:.1f}"]
        parts.append(
            f'<polyline id="live-bytes" points="{" ".join(points)}" fill="none" stroke="#c62828" '
            f'stroke-width="2"><title>live bytes per step: {", ".join(_fmt(v) for v in live)}</title>'
            "</polyline>"
        )
    by = base - bound * sy
    parts.append(
        f'<line id="lower-bound" x1="{left}" y1="{by:.1f}" x2="{width - right}" y2="{by:.1f}" '
        f'stroke="#000" stroke-dasharray="6,4"><title>layer-by-layer lower bound {_fmt(bound)} B'
        "</title></line>"
    )
    parts.append(
        f'<text x="{width - right - 4}" y="{max(by - 3, 20):.1f}" text-anchor="end" font-size="11">'
        f"lower bound {_fmt(bound)} B</text>"
    )
    parts.append(
        f'<text x="{left}" y="{height - 12}" font-size="11">operator step 0 .. {steps - 1} &#8594;'
        "; red: bytes live at each step</text>"
    )
    parts.append(f'<text x="4" y="20" font-size="11">{_fmt(top)} B</text>')
    parts.append(f'<text x="4" y="{height - bottom}" font-size="11">0</text>')
    parts.append("</svg>")
    return "".join(parts)
