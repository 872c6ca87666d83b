"""Two builds side by side: per layer time and kernel, and the totals (time, RAM, flash), with the differences.

``microcompiler compare A B`` (docs/report.md). A side is what ``analyze --json`` or ``bench --json``
printed (a saved report), or a model the command analyzes for a board (with its options: tuning log,
patches, RAM limit), so two models, two builds of one model, two boards or two saved runs compare
the same way. Layers are matched by their operator index in the model (the same model on both
sides) or, for two different models, by position. Times are in the shared vocabulary
(microcompiler/timing.py): instructions where they are exact or estimated, else seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from microcompiler.errors import MicrocompilerError
from microcompiler.timing import format_duration


@dataclass
class Side:
    """One build as compare reads it."""

    label: str
    model: str
    board: str | None
    source: str  # "estimate" (analyze) or "measured" (bench)
    instructions: int | None
    seconds: float | None
    layers: list[dict] = field(default_factory=list)  # index, name, kind, instructions, seconds, kernel
    arena_bytes: int | None = None
    ram_bytes: int | None = None
    weights_bytes: int | None = None
    flash_bytes: int | None = None


def side_from_report(report: dict, label: str) -> Side:
    """A saved ``analyze --json`` or ``bench --json`` object."""
    if "layers" in report and "totals" in report:  # analyze
        t = report["totals"]
        time = report.get("estimated_time") or {}
        layers = [
            {
                "index": layer["index"],
                "name": layer["name"],
                "kind": layer["kind"],
                "instructions": layer["estimated_instructions"],
                "seconds": _seconds(layer, time),
                "kernel": _kernel(layer.get("kernel")),
            }
            for layer in report["layers"]
        ]
        return Side(
            label,
            report["model"],
            report.get("board"),
            "estimate",
            t["estimated_instructions"],
            time.get("seconds"),
            layers,
            t.get("arena_bytes"),
            t.get("ram_bytes"),
            t.get("weights_bytes"),
            t.get("flash_bytes"),
        )
    if "inference" in report and "operators" in report:  # bench
        inference = report["inference"]
        time = inference.get("time") or {"instructions": None, "seconds": inference.get("seconds")}
        layers = [
            {
                "index": op.get("index"),
                "name": op.get("layer_name") or op.get("function"),
                "kind": op.get("kind"),
                "instructions": (op.get("time") or {}).get("instructions"),
                "seconds": (op.get("time") or {}).get("seconds", op.get("seconds")),
                "kernel": None,
            }
            for op in report["operators"]
        ]
        peak = report.get("memory_peak") or {}
        return Side(
            label,
            report["model"],
            report.get("board"),
            "measured",
            time.get("instructions"),
            time.get("seconds"),
            layers,
            peak.get("arena_bytes"),
        )
    raise MicrocompilerError(
        f"{label} is not a report compare reads; give the JSON that 'microcompiler analyze "
        "--json' or 'microcompiler bench --json' printed, or a .tflite model"
    )


def _seconds(layer: dict, time: dict) -> float | None:
    if not time.get("seconds") or not time.get("instructions"):
        return None
    return layer["estimated_instructions"] * time["seconds"] / time["instructions"]


def _kernel(kernel) -> str | None:
    if not isinstance(kernel, dict):
        return None
    return "/".join(str(kernel[k]) for k in ("variant", "isa") if kernel.get(k))


def load_report(path: str | Path) -> dict:
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise MicrocompilerError(f"cannot read the report {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return json.loads(text)
    except ValueError:
        raise MicrocompilerError(
            f"{path} is not JSON; give the output of 'microcompiler analyze --json' or "
            "'microcompiler bench --json' saved to a file"
        ) from None


def compare(a: Side, b: Side) -> dict:
    """The two sides and their differences, per layer and in total (B relative to A)."""
    same_model = a.model == b.model
    key = "index" if same_model else None
    rows = []
    b_layers = {layer["index"]: layer for layer in b.layers} if key else None
    for k, la in enumerate(a.layers):
        lb = b_layers.get(la["index"]) if b_layers is not None else (b.layers[k] if k < len(b.layers) else None)
        rows.append(_row(la, lb))
    matched = {id(r["b"]) for r in rows if r["b"] is not None}
    rows += [_row(None, lb) for lb in b.layers if id(lb) not in matched]
    totals = {
        name: _diff(getattr(a, name), getattr(b, name))
        for name in ("instructions", "seconds", "arena_bytes", "ram_bytes", "weights_bytes", "flash_bytes")
    }
    return {
        "a": vars(a),
        "b": vars(b),
        "matched_by": "operator index" if key else "position",
        "layers": rows,
        "totals": totals,
    }


def _row(la: dict | None, lb: dict | None) -> dict:
    amount = (
        "instructions"
        if (la or {}).get("instructions") is not None and (lb or {}).get("instructions") is not None
        else "seconds"
    )
    return {"a": la, "b": lb, "unit": amount, "diff": _diff((la or {}).get(amount), (lb or {}).get(amount))}


def _diff(x, y) -> dict:
    if x is None or y is None:
        return {"a": x, "b": y, "change": None, "ratio": None}
    return {"a": x, "b": y, "change": y - x, "ratio": (y / x) if x else None}


def comparison_lines(result: dict) -> list[str]:
    """The comparison as text: a header per side, a row per layer, the totals."""
    a, b = result["a"], result["b"]
    lines = [
        f"A: {a['label']}: {a['model']} on {a['board'] or 'portable C'} ({a['source']})",
        f"B: {b['label']}: {b['model']} on {b['board'] or 'portable C'} ({b['source']})",
        f"layers matched by {result['matched_by']}",
    ]
    lines.append(f"{'#':>3}  {'layer':<24} {'operator':<20} {'A':>12} {'B':>12} {'B/A':>6}  kernels (A -> B)")
    for row in result["layers"]:
        la, lb = row["a"] or {}, row["b"] or {}
        name = str(la.get("name") or lb.get("name") or "")[:24]
        kind = str(la.get("kind") or lb.get("kind") or "")[:20]
        index = la.get("index", lb.get("index", ""))
        cells = [format_amount(side.get(row["unit"]), row["unit"]) for side in (la, lb)]
        ratio = row["diff"]["ratio"]
        kernels = (
            f"{la.get('kernel') or '-'} -> {lb.get('kernel') or '-'}" if la.get("kernel") or lb.get("kernel") else ""
        )
        lines.append(
            f"{'' if index is None else index:>3}  {name:<24} {kind:<20} {cells[0]:>12} {cells[1]:>12} "
            f"{'' if ratio is None else f'{ratio:.2f}x':>6}  {kernels}"
        )
    t = result["totals"]
    for name, label, unit in (
        ("instructions", "instructions", "instructions"),
        ("seconds", "time", "seconds"),
        ("arena_bytes", "arena", "bytes"),
        ("ram_bytes", "RAM", "bytes"),
        ("weights_bytes", "weights", "bytes"),
        ("flash_bytes", "flash", "bytes"),
    ):
        d = t[name]
        if d["a"] is None and d["b"] is None:
            continue
        ratio = f" ({d['ratio']:.2f}x)" if d["ratio"] is not None else ""
        lines.append(f"{label}: {format_amount(d['a'], unit)} -> {format_amount(d['b'], unit)}{ratio}")
    return lines


def format_amount(value, unit: str) -> str:
    """One side's amount: "-" when missing, a duration for seconds, bytes with "B" (any *bytes unit)."""
    if value is None:
        return "-"
    if unit == "seconds":
        return format_duration(value)
    return f"{value:,}" + (" B" if unit.endswith("bytes") else "")
