"""The figures docs/report.md, docs/tuning.md and docs/validate.md quote come from
scripts/docs_figures.py, not from a hand (issue 27 item 8): they cannot drift.

- The cost-model table is recomputed here in full (analyze now, against the measurements
  scripts/fit_cost_model.py saved) and must equal the page's block (a long test).
- The tuning and Ray blocks must be what the script renders from its record
  (tests/data/docs_figures.json); the long test measures KWS's tuning again and finds the same
  ticks (exact under QEMU's -icount shift=0).
- Each screenshot carries the command that made it (written by the script into the PNG) and has the
  window size the script asks for.
- Outside those blocks, fenced examples and inline code, the pages hold no figure with a thousands
  separator: a number someone copied in by hand would fail here.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import docs_figures  # noqa: E402

RECORD = json.loads(docs_figures.RECORD.read_text()) if docs_figures.RECORD.exists() else {}


@pytest.mark.long  # every measured model on five boards (the unrolled LSTM and GRU take 20-30 s a compile);
# tests/test_analyze.py checks the cheap ones against the same measurements in the default suite
def test_the_cost_model_table_is_what_analyze_and_the_measurements_give_now():
    rows = docs_figures.cost_model_rows()
    assert len(rows) >= 100 and {r["board"] for r in rows} == set(docs_figures.COST_MODEL_BOARDS)
    page = docs_figures.REPORT_MD.read_text()
    assert docs_figures.block(page, "cost-model") == docs_figures.render_cost_model(rows), (
        "the estimates or the measurements changed: run python scripts/docs_figures.py cost-model"
    )
    # issue 34: analyze within 10% of bench on every measured model, on every core (or within the
    # measurement's resolution, two timer ticks, on the tiny ones)
    import fit_cost_model

    for r in rows:
        assert fit_cost_model.within(r, 0.10), r


@pytest.mark.parametrize("name", ["tuning", "ray", *docs_figures.SCREENSHOTS])
def test_each_block_is_what_the_script_writes(name):
    page = docs_figures.PAGES[name].read_text()
    assert docs_figures.block(page, name) == docs_figures.rendered(name, RECORD), (
        f"edit scripts/docs_figures.py and run it ({name}), not the page"
    )


def test_the_tuning_record_is_a_real_run():
    kws, ic, again = RECORD["tuning"]["kws"], RECORD["tuning"]["ic"], RECORD["tuning"]["ic_again"]
    assert kws["exact"] and ic["exact"] and kws["tuned_ticks"] <= kws["heuristic_ticks"]
    assert kws["operators"] == 12 and kws["builds"] >= 2 and kws["tuned"] + kws["reused"] >= 1
    assert again["tuned"] == 0 and again["reused"] == ic["tuned"] + ic["reused"] and again["builds"] == 0
    assert RECORD["tuning"]["kws_validate"] == {"passed": True, "bit_exact": True, "samples": 10}
    ray = RECORD["ray"]
    assert ray["same_log"] and ray["nodes1"]["tuned_ticks"] == ray["nodes2"]["tuned_ticks"]


@pytest.mark.parametrize("name", list(docs_figures.SCREENSHOTS))
def test_screenshots_say_the_command_that_made_them(name):
    _, command, png, size, _ = docs_figures.SCREENSHOTS[name]
    with Image.open(ROOT / png) as image:
        assert image.size == size
        assert image.text.get("Comment") == command
        assert "scripts/docs_figures.py" in image.text.get("Software", "")


def _prose(page: str) -> str:
    """The page without the script's blocks, fenced blocks and inline code."""
    page = re.sub(r"<!-- FIGURES:([\w-]+):BEGIN -->.*?<!-- FIGURES:\1:END -->", "", page, flags=re.S)
    page = re.sub(r"^```.*?^```", "", page, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", page)


@pytest.mark.parametrize("page", ["report.md", "tuning.md"])
def test_no_hand_copied_figures_outside_the_blocks(page):
    figures = re.findall(r"\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b", _prose((ROOT / "docs" / page).read_text()))
    assert figures == [], f"docs/{page} quotes {figures}: let scripts/docs_figures.py write them"


@pytest.mark.long
def test_tuning_kws_again_gives_the_recorded_ticks(tmp_path):
    command = docs_figures.TUNE_KWS.replace(docs_figures.OUT, str(tmp_path))
    now = docs_figures._tune_summary(json.loads(docs_figures.run(command, "tuning: kws").stdout))
    recorded = RECORD["tuning"]["kws"]
    assert (now["heuristic_ticks"], now["tuned_ticks"]) == (recorded["heuristic_ticks"], recorded["tuned_ticks"]), (
        "run python scripts/docs_figures.py tuning"
    )
    assert now["signatures"] == recorded["signatures"]
