"""docs/benchmarks.md's flash and RAM comparison with the 2026-11-26 tables (issue 34) is what its own
tables give (scripts/footprint_before_after.py), so a regenerated side-by-side block cannot leave it stale."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import footprint_before_after as fba  # noqa: E402


def test_the_comparison_block_is_up_to_date():
    text = fba.DOC.read_text()
    assert fba.rewrite(text) == text, "run python scripts/footprint_before_after.py"


def test_rows_pair_the_same_model_board_and_variant():
    rows = fba.compare(fba.DOC.read_text())
    keys = {(r["model"], r["board"], r["variant"]) for r in rows}
    assert len(rows) == len(keys) >= 25  # the 2026-11-26 table's rows on the boards measured since
    assert ("KWS", "mps2_an386", "default") in keys and ("AD", "mps3_an547", "default") in keys
    assert all(r["flash"][0] > 0 and r["ram"][1] > 0 for r in rows)


def test_a_larger_figure_is_named_in_the_summary():
    doc = (
        f"{fba.BEFORE_HEADING}\n\n| model | board | variant | flash | RAM |\n|---|---|---|---|---|\n"
        "| KWS | b1 | default | 100 | 50 |\n| IC | b1 | default | 200 | 60 |\n\n"
        "Our flash and RAM on `b1` (bytes):\n\n| model | variant | flash | RAM |\n|---|---|---|---|\n"
        "| KWS | default | 100 | 51 |\n| IC | default | 190 | 60 |\n\n"
        f"{fba.BEGIN}\n{fba.END}\n"
    )
    block = fba.rewrite(doc)
    assert "larger on 1: KWS on b1 (default)" in block
    assert "| KWS | b1 | default | 100 | 100 | +0 | 50 | 51 | +1 | **no** |" in block
    assert "| IC | b1 | default | 200 | 190 | -10 | 60 | 60 | +0 | yes |" in block
