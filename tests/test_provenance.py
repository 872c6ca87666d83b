"""Every JSON report and every page says what made it: tool, version, date, command (issue 27 item 4)."""

from __future__ import annotations

import json
import re

from harness import cli

from microcompiler import __version__

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


def test_json_reports_and_pages_carry_the_version_date_and_command(tmp_path):
    page = tmp_path / "a b.html"
    r = cli("analyze", TINY, "--json", "--html", page)
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)["generated_by"]
    assert made["tool"] == "microcompiler" and made["version"] == __version__
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", made["date"])
    assert made["command"] == f"microcompiler analyze {TINY} --json --html '{page}'"  # quoted as sh reads it
    html = page.read_text()
    assert f"made by microcompiler {__version__} on " in html and "analyze" in html
    island = json.loads(html.split("id='report-data'>", 1)[1].split("</script>", 1)[0])
    assert island["generated_by"]["command"] == made["command"]
    run = json.loads(cli("run", TINY, "--json").stdout)
    assert run["generated_by"]["command"] == f"microcompiler run {TINY} --json"
