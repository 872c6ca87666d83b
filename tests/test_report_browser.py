"""The HTML report renders in a real browser: headless Chromium opens the file offline, the
screenshot is not blank, the DOM has the title and one row per layer, and the console is clean."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from board_oracle import needs_board_tools
from browser import needs_chromium, render
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


@needs_chromium
def test_analyze_report_renders_in_chromium(tmp_path, shared_models):
    model = shared_models / "mlperf_tiny/kws_ref_model.tflite"
    page = tmp_path / "kws.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "analyze",
            str(model),
            "--board",
            "mps2_an386",
            "--html",
            str(page),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    layers = json.loads(proc.stdout)["layers"]
    html = page.read_text()
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html, (
        "the page must not load anything from the network"
    )
    shot, dom, errors = render(page, tmp_path)
    assert not errors, errors
    assert "<title>kws_ref_model: analysis for mps2_an386</title>" in dom
    assert dom.count('<tr class="layer">') == len(layers)
    for layer in layers:
        assert f">{layer['name']}<" in dom
    assert dom.count("<svg") >= 4  # time per layer, memory plan, flash, RAM
    # the memory plan: rectangles labelled with their layers' short names, the live-bytes curve, the bound
    plan = json.loads(proc.stdout)["memory_plan"]
    labels = re.findall(r'<text class="buffer-label"[^>]*>([^<]*)</text>', dom)
    assert len(labels) >= len(plan["buffers"]) // 2, labels
    for label in labels:
        assert any(b["layer"].startswith(label.rstrip("\u2026")) for b in plan["buffers"]), label
    assert 'id="live-bytes"' in dom and 'id="lower-bound"' in dom
    assert f"lower bound {plan['lower_bound_bytes']:,} B" in dom
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 20, "the screenshot is (nearly) one colour: nothing rendered"
    background = max(colours)[0]
    assert background < image.width * image.height * 0.97, "almost every pixel is background"


def _check_rendered(page: Path, tmp_path: Path, title: str) -> str:
    """Open the page in Chromium: no console errors, the title, a non-blank screenshot; the DOM."""
    shot, dom, errors = render(page, tmp_path)
    assert not errors, errors
    assert f"<title>{title}</title>" in dom
    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 20, "the screenshot is (nearly) one colour: nothing rendered"
    return dom


@needs_chromium
@needs_board_tools
def test_bench_and_validate_reports_render_in_chromium(tmp_path, shared_models):
    model = shared_models / "mlperf_tiny/ad01_int8.tflite"
    bench_page, validate_page = tmp_path / "bench.html", tmp_path / "validate.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "bench",
            str(model),
            "--board",
            "mps2_an386",
            "--number",
            "1",
            "--repeat",
            "1",
            "--html",
            str(bench_page),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    operators = json.loads(proc.stdout)["operators"]
    dom = _check_rendered(bench_page, tmp_path, "ad01_int8: bench on mps2_an386")
    assert "Time per layer (measured on the device)" in dom
    assert dom.count('<tr class="layer">') == len(operators)
    for op in operators:  # the measured instructions (exact under QEMU) are in the bar chart's labels
        assert f">{op['time']['instructions']:,} instr.<" in dom
    # the built firmware's flash and RAM (from its ELF) beside analyze's estimates
    bench = json.loads(proc.stdout)
    assert "estimated (analyze)" in dom and "built (firmware ELF)" in dom
    sizes = re.findall(r'<tr class="size"><td class="l">([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>', dom)
    assert {what: built for what, _, built in sizes}["flash"] == f"{bench['flash_bytes']:,}"
    assert {what: built for what, _, built in sizes}["RAM"] == f"{bench['ram_bytes']:,}"
    assert bench["ram_bytes"] > 0 and bench["flash_bytes"] > 0
    # the model's own code and weights, read from the ELF before the temporary project goes
    assert 0 < bench["model_code_bytes"] < bench["flash_bytes"] and bench["model_weights_bytes"] > 0
    assert {what: built for what, _, built in sizes}["model code"] == f"{bench['model_code_bytes']:,}"
    assert "<caption>The two columns count different firmware" in dom  # why built and estimated differ
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "validate",
            str(model),
            "--board",
            "mps2_an386",
            "--inputs",
            "2",
            "--mode",
            "host-driven",
            "--html",
            str(validate_page),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    dom = _check_rendered(validate_page, tmp_path, "ad01_int8: validation on mps2_an386")
    assert "passed: every output exact (2 inputs)" in dom
    assert dom.count('<tr class="metric">') == 1 and ">100.00%<" in dom
    # the model just ran host-driven: the chart is its measured time per operator, not the estimate
    times = json.loads(proc.stdout)["operator_times"]
    assert times["runs"] == 2 and len(times["operators"]) == len(operators)
    assert "Time per layer (measured host-driven on mps2_an386" in dom and "(estimated instructions)" not in dom
    for op in times["operators"]:
        assert op["ticks"] > 0 and f">{op['ticks']:,} ticks<" in dom
