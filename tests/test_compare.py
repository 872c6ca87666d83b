"""``microcompiler compare A B`` (issue 27 item 3): two builds, two models or two saved reports.

Two builds of one model (the M4 and the M55) are matched layer by layer by operator index, with the
kernels each board picks and B relative to A; saved ``analyze --json`` and ``bench --json`` reports
compare the same way (with no common instruction count, in seconds); the HTML page renders in
headless Chromium; a file that is no report is a one-line error.
"""

from __future__ import annotations

import json
import math

from browser import needs_chromium, render
from harness import cli

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


def test_two_builds_of_one_model_layer_by_layer(tmp_path):
    r = cli("compare", TINY, TINY, "--board", "mps2_an386", "--board-b", "mps3_an547", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    a = json.loads(cli("analyze", TINY, "--board", "mps2_an386", "--json").stdout)
    b = json.loads(cli("analyze", TINY, "--board", "mps3_an547", "--json").stdout)
    assert result["matched_by"] == "operator index"
    assert [row["a"]["index"] for row in result["layers"]] == [layer["index"] for layer in a["layers"]]
    for row, la, lb in zip(result["layers"], a["layers"], b["layers"]):
        assert (row["a"]["instructions"], row["b"]["instructions"]) == (
            la["estimated_instructions"],
            lb["estimated_instructions"],
        )
        assert math.isclose(row["diff"]["ratio"], lb["estimated_instructions"] / la["estimated_instructions"])
        assert row["a"]["kernel"].startswith(la["kernel"]["variant"])
    total = result["totals"]["instructions"]
    assert (total["a"], total["b"]) == (a["totals"]["estimated_instructions"], b["totals"]["estimated_instructions"])
    assert result["totals"]["flash_bytes"]["a"] == a["totals"]["flash_bytes"]
    text = cli("compare", TINY, TINY, "--board", "mps2_an386", "--board-b", "mps3_an547").stdout
    assert "mve" in text and "dsp" in text and "instructions: " in text and " -> " in text


def test_saved_analyze_and_bench_reports_compare_in_seconds(tmp_path):
    analysis = tmp_path / "a.json"
    analysis.write_text(cli("analyze", TINY, "--json").stdout)
    r = cli("bench", TINY, "--board", "host", "--json", "--number", "2", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    bench = tmp_path / "b.json"
    bench.write_text(r.stdout)
    r = cli("compare", analysis, bench, "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["a"]["source"] == "estimate" and result["b"]["source"] == "measured"
    # the portable-C estimate has no clock and the host has no instruction count: nothing to put side by side
    # in one unit is shown as missing, never as a made-up number
    assert all(row["diff"]["ratio"] is None for row in result["layers"])
    assert result["b"]["seconds"] > 0


def test_a_file_that_is_no_report_is_one_line(tmp_path):
    junk = tmp_path / "x.json"
    junk.write_text('{"hello": 1}')
    r = cli("compare", junk, TINY)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "is not a report compare reads" in r.stderr
    junk.write_text("not json")
    r = cli("compare", junk, TINY)
    assert r.returncode == 2 and "is not JSON" in r.stderr


@needs_chromium
def test_the_comparison_page_renders_in_chromium(tmp_path):
    page = tmp_path / "cmp.html"
    r = cli("compare", TINY, TINY, "--board", "mps2_an386", "--board-b", "mps3_an547", "--html", page)
    assert r.returncode == 0, r.stderr
    assert cli("compare", TINY, TINY, "--html", TINY).returncode == 2  # never overwrites an input
    shot, dom, errors = render(page, tmp_path)
    assert not errors, errors
    assert "<h2>Comparison</h2>" in dom and ">conv1<" in dom and "mve-dot/mve" in dom
