"""Two builds side by side: per layer time and kernel, and the totals (time, RAM, flash), with the differences.

``microcompiler compare A B`` (docs/report.md). A side is what ``analyze --json`` or ``bench --json``
printed (a saved report), or a model the command analyzes for a board (with its options: tuning log,
patches, RAM limit), so two models, two builds of one model, two boards or two saved runs compare
the same way. Layers are matched by their operator index in the model (the same model on both
sides) or, for two different models, by position. Times are in the shared vocabulary
(microcompiler/timing.py): instructions where they are exact or estimated, else seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from microcompiler.errors import MicrocompilerError
from microcompiler.timing import format_duration
from microcompiler.user_files import read_user_json


@dataclass
class Side:
    """One build as compare reads it."""

    label: str
    model: str
    board: str | None
    source: str  # "estimate" (analyze) or "measured" (bench)
    instructions: float | None
    seconds: float | None
    layers: list[dict] = field(default_factory=list)  # index, name, kind, instructions, seconds, kernel
    arena_bytes: float | None = None
    ram_bytes: float | None = None
    weights_bytes: float | None = None
    flash_bytes: float | None = None


FIX = "give the JSON that 'microcompiler analyze --json' or 'microcompiler bench --json' printed, or a .tflite model"


def side_from_report(report, label: str) -> Side:
    """A saved ``analyze --json`` or ``bench --json`` object; every field compare uses is checked
    (a damaged or hand-edited report is one line naming the field, never a traceback)."""
    r = _Reader(label)
    report = r.obj(report, "the report")
    if "layers" in report and "totals" in report:  # analyze
        t = r.obj(report["totals"], "totals")
        time = r.obj(report.get("estimated_time") or {}, "estimated_time")
        per_second = (r.num(time, "seconds", "estimated_time"), r.num(time, "instructions", "estimated_time"))
        layers = []
        for k, layer in enumerate(r.items(report["layers"], "layers")):
            where = f"layers[{k}]"
            instructions = r.num(layer, "estimated_instructions", where)
            layers.append(
                {
                    "index": r.whole(layer, "index", where),
                    "name": r.text(layer, "name", where),
                    "kind": r.text(layer, "kind", where),
                    "instructions": instructions,
                    "seconds": _seconds(instructions, *per_second),
                    "kernel": _kernel(layer.get("kernel")),
                }
            )
        return Side(
            label,
            r.text(report, "model", "the report", required=True),
            r.text(report, "board", "the report"),
            "estimate",
            r.num(t, "estimated_instructions", "totals"),
            per_second[0],
            layers,
            *(r.num(t, name, "totals") for name in ("arena_bytes", "ram_bytes", "weights_bytes", "flash_bytes")),
        )
    if "inference" in report and "operators" in report:  # bench
        inference = r.obj(report["inference"], "inference")
        time = r.obj(inference.get("time") or {}, "inference.time")
        if not inference.get("time"):
            time = {"instructions": None, "seconds": r.num(inference, "seconds", "inference")}
        layers = []
        for k, op in enumerate(r.items(report["operators"], "operators")):
            where = f"operators[{k}]"
            op_time = r.obj(op.get("time") or {}, f"{where}.time")
            seconds = r.num(op_time, "seconds", f"{where}.time")
            layers.append(
                {
                    "index": r.whole(op, "index", where),
                    "name": r.text(op, "layer_name", where) or r.text(op, "function", where),
                    "kind": r.text(op, "kind", where),
                    "instructions": r.num(op_time, "instructions", f"{where}.time"),
                    "seconds": seconds if "seconds" in op_time else r.num(op, "seconds", where),
                    "kernel": None,
                }
            )
        peak = r.obj(report.get("memory_peak") or {}, "memory_peak")
        return Side(
            label,
            r.text(report, "model", "the report", required=True),
            r.text(report, "board", "the report"),
            "measured",
            r.num(time, "instructions", "inference.time"),
            r.num(time, "seconds", "inference.time"),
            layers,
            r.num(peak, "arena_bytes", "memory_peak"),
        )
    raise MicrocompilerError(f"{label} is not a report compare reads; {FIX}")


class _Reader:
    """Typed fields of a saved report; a wrong one is a one-line error naming it."""

    def __init__(self, label: str):
        self.label = label

    def _bad(self, where: str, kind: str):
        return MicrocompilerError(f"{self.label} is a damaged report: {where} is not {kind}; {FIX}")

    def obj(self, value, where: str) -> dict:
        if not isinstance(value, dict):
            raise self._bad(where, "an object")
        return value

    def items(self, value, where: str) -> list[dict]:
        if not isinstance(value, list):
            raise self._bad(where, "a list")
        return [self.obj(v, f"{where}[{k}]") for k, v in enumerate(value)]

    def num(self, d: dict, key: str, where: str) -> int | float | None:
        value = d.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise self._bad(f"{where}.{key}", "a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise self._bad(f"{where}.{key}", "a finite number")
        return value

    def whole(self, d: dict, key: str, where: str) -> int | None:
        value = d.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self._bad(f"{where}.{key}", "a whole number")
        return value

    def text(self, d: dict, key: str, where: str, required: bool = False) -> str | None:
        value = d.get(key)
        if (value is None and required) or (value is not None and not isinstance(value, str)):
            raise self._bad(f"{where}.{key}", "text")
        return value


def _seconds(instructions, seconds, total) -> float | None:
    if not seconds or not total or instructions is None:
        return None
    return instructions * seconds / total


def _kernel(kernel) -> str | None:
    if not isinstance(kernel, dict):
        return None
    return "/".join(str(kernel[k]) for k in ("variant", "isa") if kernel.get(k))


def load_report(path: str | Path):
    """A saved report's JSON, read like every user file (bounded; a device or directory refused)."""
    return read_user_json(
        path,
        "the report",
        "give the output of 'microcompiler analyze --json' or 'microcompiler bench --json' saved to a file",
    )


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
