"""The operator table: TFLM's builtin list against `microcompiler ops`, and docs/operators.md."""

import json
import subprocess
import sys
from pathlib import Path

from microcompiler.ops.registry import markdown

ROOT = Path(__file__).resolve().parents[1]
# Taken from TFLite Micro's tensorflow/lite/micro/micro_mutable_op_resolver.h (the Add* methods):
# every builtin it registers, and the ones that keep state or need several subgraphs.
TFLM_BUILTINS = json.loads((ROOT / "tests/data/tflm_registered_builtins.json").read_text())


def cli(*args):
    return subprocess.run([sys.executable, "-m", "microcompiler.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_every_stateless_tflm_builtin_is_supported():
    proc = cli("ops", "--json")
    assert proc.returncode == 0, proc.stderr
    listed = {row["operator"] for row in json.loads(proc.stdout)["operators"]}
    stateless = set(TFLM_BUILTINS["builtins"]) - set(TFLM_BUILTINS["stateful_or_control_flow"])
    missing = sorted(stateless - listed)
    assert not missing, f"TFLM registers these stateless operators that microcompiler ops does not list: {missing}"


def test_ops_json_describes_each_operator():
    rows = json.loads(cli("ops", "--json").stdout)["operators"]
    for row in rows:
        assert row["types"], row
        assert row["inputs"][0] <= row["inputs"][1] and row["outputs"][0] <= row["outputs"][1], row


def test_plain_table_lists_every_operator():
    proc = cli("ops")
    assert proc.returncode == 0
    rows = json.loads(cli("ops", "--json").stdout)["operators"]
    for row in rows:
        assert any(line.split()[0] == row["operator"] for line in proc.stdout.splitlines() if line.strip())


def test_docs_operators_page_is_generated_from_the_registry():
    page = (ROOT / "docs/operators.md").read_text()
    assert page == markdown(), (
        "docs/operators.md is out of date: regenerate it with 'microcompiler ops --markdown > docs/operators.md'"
    )


def test_stateful_operators_are_listed_as_tflm_operators():
    rows = {row["operator"]: row for row in json.loads(cli("ops", "--json").stdout)["operators"]}
    for kind in ("SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM"):
        assert rows[kind]["in_tflm"], kind
    roadmap = (ROOT / "docs/operators.md").read_text().split("## On the roadmap")[1].split("\n## ")[0]
    assert "- UNIDIRECTIONAL_SEQUENCE_LSTM" not in roadmap
