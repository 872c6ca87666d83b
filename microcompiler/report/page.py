"""The report page: per-layer table, time per layer, memory plan, flash/RAM, validation metrics."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from html import escape
from pathlib import Path

from microcompiler.analysis.compare import format_amount
from microcompiler.errors import MicrocompilerError
from microcompiler.report.provenance import provenance
from microcompiler.report.svg import bar_chart, memory_plan_chart, stacked_bar
from microcompiler.timing import describe

# In the head of every report: what lets a later --html replace it (and nothing else).
GENERATOR_TAG = "<meta name='generator' content='microcompiler report'>"
_HEAD_BYTES = 512

_STYLE = """body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td.l,th.l{text-align:left}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}.ok{color:#1a7f37}.bad{color:#c62828}
caption{caption-side:bottom;text-align:left;max-width:760px;padding-top:4px;color:#444}"""


def _cell(v, left=False) -> str:
    text = f"{v:,}" if isinstance(v, int) else escape(str(v))
    return f'<td class="l">{text}</td>' if left else f"<td>{text}</td>"


def _layer_table(analysis: dict, bench: dict | None) -> str:
    measured = {op["index"]: op for op in (bench or {}).get("operators", [])}
    head = ["#", "layer", "operator", "type", "output", "MACs", "weights B", "kernel", "est. instructions"]
    if measured:
        head.append("measured ticks")
    rows = ["<table id='layers'><tr>" + "".join(f"<th class='l'>{escape(h)}</th>" for h in head) + "</tr>"]
    for layer in analysis["layers"]:
        kernel = layer["kernel"].get("variant", "") + (
            f" ({layer['kernel']['isa']})" if "isa" in layer["kernel"] else ""
        )
        cells = [
            _cell(layer["index"]),
            _cell(layer["name"], True),
            _cell(layer["kind"], True),
            _cell(layer["dtype"], True),
            _cell("x".join(map(str, layer["outputs"][0])) if layer["outputs"] else "-"),
            _cell(layer["macs"]),
            _cell(layer["weights_bytes"]),
            _cell(kernel, True),
            _cell(layer["estimated_instructions"]),
        ]
        if measured:
            cells.append(_cell(measured.get(layer["index"], {}).get("ticks", "-")))
        rows.append(f"<tr class='layer'>{''.join(cells)}</tr>")
    return "".join(rows) + "</table>"


def _time_chart(analysis: dict | None, bench: dict | None, validation: dict | None = None) -> str:
    if bench and bench.get("operators"):
        # each bar under its short layer name (the same as analyze's), in instructions where they are exact
        exact = all((op.get("time") or {}).get("instructions") is not None for op in bench["operators"])
        rows = [
            (
                f"{op.get('index', '')} {op.get('layer_name') or op.get('kind', op['function'])}",
                op["time"]["instructions"] if exact else op["ticks"],
            )
            for op in bench["operators"]
        ]
        return bar_chart(rows, "instr." if exact else "ticks", "Time per layer (measured on the device)")
    run = (validation or {}).get("operator_times")
    if run and run.get("operators"):  # validate just ran the model host-driven: its own times
        rows = [(f"{op['index']} {op['layer']}", op["ticks"]) for op in run["operators"]]
        return bar_chart(
            rows,
            "ticks",
            f"Time per layer (measured host-driven on {run['board']}, "
            f"median of {run['runs']} runs, timer at {run['timer_hz']:,} Hz)",
        )
    rows = [(f"{layer['index']} {layer['name']}", layer["estimated_instructions"]) for layer in analysis["layers"]]
    return bar_chart(rows, "instr.", "Time per layer (estimated instructions)")


# Why the two size columns of a bench page differ (docs/report.md says the same; a test holds both).
ESTIMATE_MEANS = (
    "the firmware you deploy: the model's weights and code with the standalone runtime (start-up, platform "
    "hooks, the report of the run) and an 8 KiB stack"
)
BUILT_MEANS = (
    "the whole host-driven firmware bench ran, summed from its ELF's sections: the same model plus the RPC "
    "server, the operator registry and the memory pool the host allocates tensors from; RAM is every "
    "writable section (data, bss, the stack region)"
)
SIZES_CAPTION = (
    f"The two columns count different firmware, so either may be the larger. Estimated: {ESTIMATE_MEANS}. "
    f"Built: {BUILT_MEANS}. The rows 'model code' and 'model weights' count the model alone in both."
)


def _built_sizes(analysis: dict | None, bench: dict) -> str:
    """The built firmware's flash and RAM (from its ELF) beside analyze's estimates."""
    t = (analysis or {}).get("totals", {})
    rows = [
        ("flash", t.get("flash_bytes"), bench.get("flash_bytes")),
        ("RAM", t.get("ram_bytes"), bench.get("ram_bytes")),
        ("model code", t.get("code_bytes_estimate"), bench.get("model_code_bytes")),
        ("model weights", t.get("weights_bytes"), bench.get("model_weights_bytes")),
    ]
    rows = [r for r in rows if r[2] is not None]
    if not rows:
        return ""
    body = "".join(
        f"<tr class='size'>{_cell(what, True)}{_cell('-' if est is None else est)}{_cell(built)}</tr>"
        for what, est, built in rows
    )
    return (
        f"<table id='sizes'><caption>{escape(SIZES_CAPTION)}</caption><tr><th class='l'>bytes</th>"
        f"<th title='{escape(ESTIMATE_MEANS)}'>estimated (analyze)</th>"
        f"<th title='{escape(BUILT_MEANS)}'>built (firmware ELF)</th></tr>{body}</table>"
    )


def _memory_section(analysis: dict) -> str:
    t = analysis["totals"]
    parts = []
    fit = analysis.get("fit")
    flash_segments = [("weights", t["weights_bytes"]), ("code (estimate)", t["code_bytes_estimate"])]
    ram_segments = [
        ("arena", t["arena_bytes"]),
        ("scratch", t["scratch_bytes"]),
        ("state", t["state_bytes"]),
        ("stack", t["stack_bytes_estimate"]),
        (
            "runtime and I/O",
            max(
                0, t["ram_bytes"] - t["arena_bytes"] - t["scratch_bytes"] - t["state_bytes"] - t["stack_bytes_estimate"]
            ),
        ),
    ]
    if fit:
        parts.append(stacked_bar(flash_segments, fit["flash"]["available"], f"Flash ({fit['flash']['region']})"))
        parts.append(stacked_bar(ram_segments, fit["ram"]["available"], f"RAM ({fit['ram']['region']})"))
        for what in ("flash", "ram"):
            f = fit[what]
            cls = "ok" if f["fits"] else "bad"
            parts.append(
                f"<p class='{cls}'>{what}: {f['needed']:,} of {f['available']:,} B ({f['used_percent']}%), "
                f"margin {f['margin']:,} B</p>"
            )
    else:
        parts.append(stacked_bar(flash_segments, sum(v for _, v in flash_segments), "Flash"))
        parts.append(stacked_bar(ram_segments, sum(v for _, v in ram_segments), "RAM"))
    return "".join(parts)


def _validation_section(validation: dict) -> str:
    """validate's report (microcompiler/validation/runner.py): one row per mode, reference and output."""
    if not validation["passed"]:
        verdict = "FAILED: outputs differ"
    elif validation.get("bit_exact", False):
        verdict = "passed: every output exact"
    else:  # floats within tolerance: say how far from TFLM's bits
        verdict = f"passed within tolerance, not exact: largest float error {validation.get('max_ulp_error', 0):,} ulp"
    rows = [
        f"<p class='{'ok' if validation['passed'] else 'bad'}' id='verdict'>{escape(verdict)} "
        f"({len(validation['samples'])} inputs)</p>",
        "<table id='validation'><tr><th class='l'>mode</th><th class='l'>against</th><th class='l'>output</th>"
        "<th>exact</th><th>max abs err</th><th>mean abs err</th><th>rmse</th><th>cosine</th><th>top-1 agreement</th>"
        "</tr>",
    ]
    for c in validation["comparisons"]:
        for out in c["outputs"]:
            top1 = "-" if out.get("top1_agreement") is None else f"{100 * out['top1_agreement']:.1f}%"
            # against the float model nothing is meant to be exact: its errors say how close
            exact = "-" if c["against"] == "float" else f"{100 * out['exact_match_rate']:.2f}%"
            rows.append(
                "<tr class='metric'>"
                + _cell(c["mode"], True)
                + _cell(c["against"], True)
                + _cell(out["name"], True)
                + _cell(exact)
                + _cell(f"{out['max_abs_error']:.6g}")
                + _cell(f"{out['mean_abs_error']:.6g}")
                + _cell(f"{out.get('rmse', 0.0):.6g}")
                + _cell(f"{out['cosine_similarity']:.6f}")
                + _cell(top1)
                + "</tr>"
            )
    rows.append("</table>")
    d = validation.get("divergence")
    if d and d["diverged"]:
        rows.append(
            f"<p class='bad' id='divergence'>first diverging layer: operator {d['index']} "
            f"{escape(d['layer'])} ({escape(d['operator'])}), tensor {escape(d['tensor'])}: max error "
            f"{d['max_abs_error']:g}, {d['mismatched_elements']:,} of {d['elements']:,} elements differ</p>"
        )
    if d and d["skipped_tensors"]:
        rows.append(f"<p>not compared: {len(d['skipped_tensors'])} intermediate tensors the passes removed</p>")
    return "".join(rows)


def _comparison_section(comparison: dict) -> str:
    """compare's result: the two sides, a row per layer with B relative to A, the totals."""
    a, b = comparison["a"], comparison["b"]
    head = "".join(
        f"<p><b>{side}</b>: {escape(str(s['label']))}: {escape(str(s['model']))} on "
        f"{escape(str(s['board'] or 'portable C'))} ({escape(s['source'])})</p>"
        for side, s in (("A", a), ("B", b))
    )
    rows = [
        "<tr><th>#</th><th>layer</th><th>operator</th><th>A</th><th>B</th><th>B/A</th><th>kernel A</th>"
        "<th>kernel B</th></tr>"
    ]
    for row in comparison["layers"]:
        la, lb = row["a"] or {}, row["b"] or {}
        unit = row["unit"]
        cells = [(format_amount(la.get(unit), unit)), (format_amount(lb.get(unit), unit))]
        rows.append(
            "<tr>"
            + _cell(la.get("index", lb.get("index", "")))
            + _cell(la.get("name") or lb.get("name"), True)
            + _cell(la.get("kind") or lb.get("kind"), True)
            + _cell(cells[0])
            + _cell(cells[1])
            + _cell(_ratio(row["diff"]["ratio"]))
            + _cell(la.get("kernel") or "", True)
            + _cell(lb.get("kernel") or "", True)
            + "</tr>"
        )
    totals = "".join(
        f"<tr><td>{escape(name.replace('_', ' '))}</td>{_cell(format_amount(d['a'], name))}"
        f"{_cell(format_amount(d['b'], name))}{_cell(_ratio(d['ratio']))}</tr>"
        for name, d in comparison["totals"].items()
        if d["a"] is not None or d["b"] is not None
    )
    return (
        head + f"<p>layers matched by {escape(comparison['matched_by'])}</p><table>{''.join(rows)}</table>"
        f"<h2>Totals</h2><table><tr><th></th><th>A</th><th>B</th><th>B/A</th></tr>{totals}</table>"
    )


def _ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}x"


def render_report(
    title: str,
    analysis: dict | None = None,
    bench: dict | None = None,
    validation: dict | None = None,
    comparison: dict | None = None,
) -> str:
    """The whole page as one string (everything inline: it opens offline)."""
    body = [f"<h1>{escape(title)}</h1>"]
    if validation:  # what validate is for comes first
        body.append("<h2>Validation</h2>" + _validation_section(validation))
    if comparison:
        body.append("<h2>Comparison</h2>" + _comparison_section(comparison))
    if analysis:
        t = analysis["totals"]
        body.append(
            f"<p>{len(analysis['layers'])} layers, {t['macs']:,} MACs, weights {t['weights_bytes']:,} B, "
            f"arena {t['arena_bytes']:,} B, estimated {t['estimated_instructions']:,} instructions"
            + (f" on {escape(analysis['board'])} ({escape(analysis['core'])})" if analysis.get("board") else "")
            + "</p>"
        )
        body.append("<h2>Layers</h2>" + _layer_table(analysis, bench))
    if analysis or bench:
        body.append("<h2>Time per layer</h2>" + _time_chart(analysis, bench, validation))
    if bench:
        inference = bench["inference"]
        versus = (
            f"; analyze estimated {inference['estimated_instructions']:,} instructions "
            f"({inference['estimate_error'] * 100:+.0f}%)"
            if inference.get("estimate_error") is not None
            else ""
        )
        body.append(
            f"<p>measured on {escape(str(bench['board']))}: {escape(describe(inference['time']))} per "
            f"inference ({inference['ticks']:,} timer ticks){escape(versus)}</p>"
        )
    if analysis:
        plan = analysis["memory_plan"]
        body.append(
            "<h2>Memory plan</h2>"
            + memory_plan_chart(plan, "Arena: tensors over time and address")
            + f"<p>arena {plan['arena_bytes']:,} B; layer-by-layer lower bound {plan['lower_bound_bytes']:,} B</p>"
        )
        body.append("<h2>Flash and RAM</h2>" + _memory_section(analysis))
    if bench:
        body.append(_built_sizes(analysis, bench))
    # '<', '>' and '&' as JSON escapes: no tensor name ('</script>', '<!--<script>') can end or confuse the
    # script element; JSON.parse reads them back unchanged
    made = provenance()
    body.append(
        f"<p class='provenance'>made by {escape(made['tool'])} {escape(made['version'])} on "
        f"{escape(made['date'])}: <code>{escape(made['command'])}</code></p>"
    )
    data = (
        json.dumps(
            {
                "analysis": analysis,
                "bench": bench,
                "validation": validation,
                "comparison": comparison,
                "generated_by": made,
            }
        )
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{GENERATOR_TAG}"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>{''.join(body)}"
        f"<script type='application/json' id='report-data'>{data}</script></body></html>\n"
    )


def check_report_path(path: str | Path, inputs: Sequence = ()) -> Path:
    """Refuse, in one line, a report path that would overwrite a file microcompiler did not write.

    The report may be a new file or replace an earlier report (its head carries ``GENERATOR_TAG``);
    never the model, an input, or anything else (the rule ``compile -o`` keeps). Commands call this
    before their work, so a long run does not end in a refusal; ``write_report`` checks again.
    """
    path = Path(path)
    for given in inputs:
        try:
            if given is not None and path.exists() and path.samefile(given):
                raise MicrocompilerError(
                    f"--html {path} is the same file as the input {given}; the report would "
                    "overwrite it: choose another file name, e.g. report.html"
                )
        except OSError:
            continue
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise MicrocompilerError(
            f"--html {path} exists and is not a plain file; choose a new file name, e.g. report.html"
        )
    if path.exists():
        try:
            with open(path, "rb") as f:
                head = f.read(_HEAD_BYTES)
        except OSError as exc:
            raise MicrocompilerError(f"cannot read the existing --html file {path}: {exc.strerror or exc}") from None
        if GENERATOR_TAG.encode() not in head:
            raise MicrocompilerError(
                f"--html {path} exists and is not a microcompiler report; it is not "
                "overwritten: choose a new file name or remove it first"
            )
    return path


def write_report(path: str | Path, title: str, inputs: Sequence = (), **sections) -> Path:
    """Write the page to ``path`` (new, or an earlier report: ``check_report_path``), all at once:
    a temporary file next to it renamed into place. A one-line error when it cannot be written."""
    path = check_report_path(path, inputs)
    page = render_report(title, **sections)
    try:
        fd, temp = tempfile.mkstemp(prefix=".microcompiler-report-", suffix=".html", dir=path.parent or ".")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(page)
            os.chmod(temp, 0o666 & ~_umask())
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as exc:
        raise MicrocompilerError(f"cannot write the report {path}: {exc.strerror or exc}") from None
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
