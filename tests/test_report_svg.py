"""The report's SVG charts and page sections alone (issue 27 item 4): labelled memory-plan rectangles,
the live-bytes curve and the lower bound, built sizes beside estimates, measured validate times."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from microcompiler.analysis.memory_plan import live_bytes
from microcompiler.report.page import BUILT_MEANS, ESTIMATE_MEANS, SIZES_CAPTION, render_report
from microcompiler.report.svg import memory_plan_chart

SVG = "{http://www.w3.org/2000/svg}"


def _plan() -> dict:
    # three buffers: a wide one, a second sharing steps 1..2, and one too narrow for any label
    buffers = [
        {
            "tensor": "model/conv_1/Relu;StatefulPartitionedCall",
            "layer": "conv_1",
            "offset": 0,
            "bytes": 600,
            "first_step": 0,
            "last_step": 1,
        },
        {"tensor": "t2", "layer": "<dense&2>", "offset": 600, "bytes": 400, "first_step": 1, "last_step": 2},
        {
            "tensor": "t3",
            "layer": "a_very_long_layer_name_that_does_not_fit",
            "offset": 0,
            "bytes": 300,
            "first_step": 2,
            "last_step": 2,
        },
    ]
    return {"steps": 40, "arena_bytes": 1000, "lower_bound_bytes": 1000, "buffers": buffers}


def test_live_bytes_sums_the_buffers_live_at_each_step():
    plan = _plan()
    assert live_bytes(plan)[:4] == [600, 1000, 700, 0]
    plan["live_bytes_per_step"] = [1, 2, 3]
    assert live_bytes(plan) == [1, 2, 3]  # the plan's own data wins


def test_memory_plan_chart_labels_rectangles_and_draws_the_curve_and_bound():
    plan = _plan()
    plan["steps"] = 3  # wide steps: every rectangle has room for a label
    svg = memory_plan_chart(plan, "arena")
    root = ET.fromstring(svg)  # well-formed: the names are escaped
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "buffer-label"]
    assert labels[:2] == ["conv_1", "<dense&2>"] and labels[2].endswith("\u2026")
    assert "a_very_long".startswith(labels[2][:-1][:11]) and len(labels[2]) < 40
    curve = [p for p in root.iter(f"{SVG}polyline") if p.get("id") == "live-bytes"]
    assert len(curve) == 1
    ys = [float(pt.split(",")[1]) for pt in curve[0].get("points").split()]
    assert len(ys) == 2 * 3 and ys[2] < ys[4] < ys[0]  # 1000 B at step 1 highest, then 700, then 600
    bound = [ln for ln in root.iter(f"{SVG}line") if ln.get("id") == "lower-bound"]
    assert len(bound) == 1 and abs(float(bound[0].get("y1")) - ys[2]) < 0.2  # the bound is the largest live set
    assert "lower bound 1,000 B" in svg


def test_memory_plan_chart_leaves_unlabelled_what_is_too_narrow():
    plan = _plan()  # 40 steps: the one-step rectangle is ~17 px wide
    root = ET.fromstring(memory_plan_chart(plan, "arena"))
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "buffer-label"]
    assert "a_very_long_layer_name_that_does_not_fit" not in labels and not any(
        lbl.startswith("a_ve") for lbl in labels
    )
    assert len([r for r in root.iter(f"{SVG}rect") if r.get("class") == "buffer"]) == 3  # every tooltip stays


def _analysis() -> dict:
    plan = _plan()
    layers = [
        {
            "index": k,
            "name": f"layer_{k}",
            "kind": "CONV_2D",
            "dtype": "int8",
            "outputs": [[1, 4]],
            "macs": 10,
            "weights_bytes": 5,
            "kernel": {"variant": "direct"},
            "estimated_instructions": 100 * (k + 1),
        }
        for k in range(3)
    ]
    totals = {
        "macs": 30,
        "weights_bytes": 15,
        "arena_bytes": 1000,
        "estimated_instructions": 600,
        "code_bytes_estimate": 900,
        "flash_bytes": 915,
        "scratch_bytes": 0,
        "state_bytes": 0,
        "stack_bytes_estimate": 256,
        "ram_bytes": 1500,
    }
    return {"layers": layers, "totals": totals, "memory_plan": plan}


def test_bench_page_shows_built_sizes_beside_estimates():
    bench = {
        "board": "b",
        "operators": [],
        "flash_bytes": 12345,
        "ram_bytes": 6789,
        "model_code_bytes": 1111,
        "model_weights_bytes": 15,
        "inference": {"ticks": 10, "time": {"seconds": 1e-5, "basis": "host clock", "instructions": None}},
    }
    page = render_report("t", analysis=_analysis(), bench=bench)
    rows = re.findall(r"<tr class='size'><td class=\"l\">([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>", page)
    assert rows == [
        ("flash", "915", "12,345"),
        ("RAM", "1,500", "6,789"),
        ("model code", "900", "1,111"),
        ("model weights", "15", "15"),
    ]
    assert "estimated (analyze)" in page and "built (firmware ELF)" in page
    assert "id='sizes'" not in render_report("t", analysis=_analysis())  # nothing built: no column of blanks
    # why the columns differ: a caption under the table and each heading's tooltip, and docs/report.md
    caption = re.search(r"<table id='sizes'><caption>([^<]*)</caption>", page).group(1)
    assert html.unescape(caption) == SIZES_CAPTION and "host-driven firmware" in SIZES_CAPTION
    titles = re.findall(r"<th title='([^']*)'>(estimated \(analyze\)|built \(firmware ELF\))</th>", page)
    assert [(html.unescape(t), h) for t, h in titles] == [
        (ESTIMATE_MEANS, "estimated (analyze)"),
        (BUILT_MEANS, "built (firmware ELF)"),
    ]
    docs = " ".join((Path(__file__).parents[1] / "docs/report.md").read_text().split())
    assert f"Estimated (analyze): {ESTIMATE_MEANS}. Built: {BUILT_MEANS}." in docs


def _validation(**extra) -> dict:
    return {"passed": True, "bit_exact": True, "samples": ["random 0"], "comparisons": [], "divergence": None, **extra}


def test_validate_page_charts_the_measured_time_when_it_has_one():
    times = {
        "board": "mps2_an386",
        "runs": 2,
        "timer_hz": 25_000_000,
        "operators": [{"index": k, "layer": f"layer_{k}", "kind": "CONV_2D", "ticks": 4321 + k} for k in range(3)],
    }
    page = render_report("t", analysis=_analysis(), validation=_validation(operator_times=times))
    assert "Time per layer (measured host-driven on mps2_an386, median of 2 runs" in page
    assert ">4,321 ticks<" in page and ">4,323 ticks<" in page and "(estimated instructions)" not in page
    page = render_report("t", analysis=_analysis(), validation=_validation())  # standalone only: the estimate
    assert "Time per layer (estimated instructions)" in page and " ticks<" not in page


def test_validate_page_says_no_exact_rate_against_the_float_model_and_gives_the_rmse():
    def output(rate, rmse):
        return {
            "name": "y",
            "exact_match_rate": rate,
            "max_abs_error": 0.5,
            "mean_abs_error": 0.25,
            "rmse": rmse,
            "cosine_similarity": 0.99,
            "top1_agreement": None,
        }

    comparisons = [
        {"mode": "host-driven", "against": "tflm", "outputs": [output(1.0, 0.0)]},
        {"mode": "host-driven", "against": "float", "outputs": [output(0.0, 0.3125)]},
    ]
    page = render_report("t", analysis=_analysis(), validation=_validation(comparisons=comparisons))
    rows = re.findall(r"<tr class='metric'>((?:<td[^>]*>[^<]*</td>)+)</tr>", page)
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in rows]
    assert [c[1] for c in cells] == ["tflm", "float"]
    assert cells[0][3] == "100.00%" and cells[1][3] == "-"  # never "exact 0.00%" against the float model
    assert cells[1][6] == "0.3125" and "<th>rmse</th>" in page
