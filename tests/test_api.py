"""microcompiler.api (issue 27 item 7): plain data, equal to what the commands print with --json."""

from __future__ import annotations

import json

from harness import cli

from microcompiler import api

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


def _without_provenance(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "generated_by"}


def test_analyze_and_compare_equal_the_commands_json():
    ours = api.analyze(TINY, "mps2_an386")
    theirs = json.loads(cli("analyze", TINY, "--board", "mps2_an386", "--json").stdout)
    assert json.loads(json.dumps(ours)) == _without_provenance(theirs)
    both = api.compare(TINY, TINY, board="mps2_an386", board_b="mps3_an547")
    command = json.loads(
        cli("compare", TINY, TINY, "--board", "mps2_an386", "--board-b", "mps3_an547", "--json").stdout
    )
    assert both["totals"] == command["totals"] and len(both["layers"]) == len(command["layers"])


def test_compile_writes_only_when_asked_and_returns_the_metadata(tmp_path):
    meta = api.compile(TINY)
    assert meta["name"] == "tiny_cnn_int8" and not any(tmp_path.iterdir())
    written = api.compile(TINY, output=tmp_path / "lib")
    assert json.loads((tmp_path / "lib" / "metadata.json").read_text())["arena_bytes"] == written["arena_bytes"]


def test_bench_and_validate_on_the_host_return_plain_data():
    bench = api.bench(TINY, number=2, repeat=1)
    assert bench["inference"]["time"]["basis"] == "host clock" and len(bench["operators"]) == 6
    json.dumps(bench)  # plain data: serializable as it is
    result = api.validate(TINY, inputs=2, modes=("standalone",))
    assert result["passed"] and result["bit_exact"] and result["samples"] == ["seed 0", "seed 1"]
    json.dumps(result)
