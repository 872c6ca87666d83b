"""scripts/tflm_side_by_side.py: one model on one board, our firmware next to TFLM + CMSIS-NN
(../shared/tflm/tflm-bench) on the same input, both checked against the TFLM interpreter.

The default suite runs the harness against a stand-in for tflm-bench (a script with the kit's command
line and output files, whose outputs and figures the test chooses): the row's arithmetic and the input
both sides get; that an output differing from the interpreter's or a failing kit is an error, never a
figure; how the tables print an error row. The real kit is in the `long`
test: its first call per board builds TFLM + CMSIS-NN (6 minutes on 2 free cores, 26 on busy ones),
more than the default suite's budget on CI's fresh machine (.ci/run does not build it; with the
library in ~/.cache/tflm-bench the long test takes seconds).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import benchmarks  # noqa: E402
import tflm_bench  # noqa: E402
import tflm_side_by_side as sbs  # noqa: E402
from oracle import Oracle  # noqa: E402

BOARD = "mps2_an386"

# A stand-in for tflm-bench: its arguments and files, the outputs taken from STUB_OUTPUT (a .npy),
# the instructions from STUB_INSTRUCTIONS, the exit status and message from STUB_EXIT.
STUB = """\
import argparse, json, os, sys
import numpy as np
ap = argparse.ArgumentParser()
ap.add_argument("model"); ap.add_argument("--board"); ap.add_argument("--input", nargs="+", default=[])
ap.add_argument("--out"); ap.add_argument("--json", action="store_true"); ap.add_argument("--cache")
ap.add_argument("--timeout")
a = ap.parse_args()
if os.environ.get("STUB_EXIT"):
    print("tflm-bench: error: firmware reported an error: " + os.environ["STUB_EXIT"], file=sys.stderr)
    sys.exit(1)
os.makedirs(a.out, exist_ok=True)
for k, path in enumerate(a.input):
    np.save(os.path.join(a.out, f"input_{k}.npy"), np.load(path))
out = np.load(os.environ["STUB_OUTPUT"])
np.save(os.path.join(a.out, "output_0.npy"), out)
print(json.dumps(dict(instructions=int(os.environ["STUB_INSTRUCTIONS"]), arena_used_bytes=1234, stack_bytes=567,
                      text_bytes=40000, data_bytes=100, bss_bytes=200,
                      outputs=[dict(dtype=str(out.dtype), shape=list(out.shape), sha="")])))
"""


@pytest.fixture
def hello(shared_models):
    return shared_models / "tflm" / "hello_world_int8.tflite"


@pytest.fixture
def stub(tmp_path, monkeypatch):
    """tflm_bench.KIT -> the stand-in; returns a function setting its output and instructions."""
    kit = tmp_path / "tflm-bench-stub"
    kit.write_text(STUB)
    monkeypatch.setattr(tflm_bench, "KIT", kit)

    def configure(output: np.ndarray | None = None, instructions: int = 0, fail: str = "") -> None:
        if output is not None:
            np.save(tmp_path / "stub_output.npy", output)
            monkeypatch.setenv("STUB_OUTPUT", str(tmp_path / "stub_output.npy"))
        monkeypatch.setenv("STUB_INSTRUCTIONS", str(instructions))
        if fail:
            monkeypatch.setenv("STUB_EXIT", fail)

    return configure


def expected_output(model: Path) -> np.ndarray:
    """The TFLM interpreter's output on `run`'s seeded random input (what the harness feeds both sides)."""
    from microcompiler.compiler import compile_model
    from microcompiler.inputs import random_inputs

    return Oracle(model.read_bytes()).run(random_inputs(compile_model(model).info.inputs))[0]


def test_row_puts_our_figures_next_to_tflms(hello, stub, tmp_path):
    stub(expected_output(hello), instructions=2000)
    row = sbs.side_by_side(hello, BOARD, tmp_path / "w")
    assert row["check"] == "bit-exact"
    assert row["tflm_instructions"] == 2000 and row["tflm_arena"] == 1234 and row["tflm_stack"] == 567
    assert row["tflm_flash"] == 40100 and row["tflm_ram"] == 1234 + 567 + 100 + 200
    assert row["instructions"] > 0 and row["ratio"] == row["instructions"] / 2000
    assert row["macs"] == 16 + 16 * 16 + 16  # hello_world: FC 1->16, 16->16, 16->1
    assert row["per_mac"] == row["instructions"] / row["macs"]
    # hello_world is a few timer ticks: its estimate is held against bench's count over many runs,
    # which a single timed run can only bracket to one tick (40 instructions on the M4)
    assert row["instructions"] < sbs.SHORT_MODEL and row["estimate_basis"] is not None
    assert abs(row["estimate_basis"] - row["instructions"]) <= 2 * 40
    assert row["estimate"] > 0 and row["estimate_error"] == row["estimate"] / row["estimate_basis"] - 1
    assert row["flash"] > row["weights"] > 0 and row["stack"] > 0 and row["ram"] > row["arena"] > 0
    # the stand-in got the input our firmware ran on
    assert np.array_equal(np.load(tmp_path / "w" / "tflm" / "input_0.npy"), np.load(row["input_files"][0]))


def test_an_output_that_differs_from_the_interpreters_is_an_error_not_a_figure():
    want = [np.array([[5, -3, 127]], dtype=np.int8)]
    assert sbs.compare("m", [np.array([5, -3, 127], dtype=np.int8)], want) == "bit-exact"
    with pytest.raises(sbs.SideBySideError, match=r"m: output 0 differs .* in 1 of 3 values \(first \[1\]: -2 vs -3\)"):
        sbs.compare("m", [np.array([5, -2, 127], dtype=np.int8)], want)
    with pytest.raises(sbs.SideBySideError, match="m: 2 outputs, the TFLM interpreter has 1"):
        sbs.compare("m", want * 2, want)
    # float outputs: within 1e-5 relative (TFLM's firmware uses fused multiply-add, the interpreter not)
    f = [np.array([1.0, -2.0], dtype=np.float32)]
    assert sbs.compare("f", [np.array([1.0, -2.0], dtype=np.float32)], f) == "bit-exact"
    assert sbs.compare("f", [np.array([1.000001, -2.0], dtype=np.float32)], f) == "within 1e-5"
    with pytest.raises(sbs.SideBySideError, match=r"f: output 0\[0\]"):
        sbs.compare("f", [np.array([1.001, -2.0], dtype=np.float32)], f)


def test_a_failing_tflm_bench_is_an_error_with_its_message(hello, stub, tmp_path):
    stub(fail="Invoke failed")
    with pytest.raises(tflm_bench.TflmBenchError, match="firmware or TFLM error: firmware reported .*Invoke failed"):
        tflm_bench.run_tflm(hello, BOARD, [], tmp_path / "out")


def test_an_error_row_is_printed_as_an_error_without_figures():
    good = dict(
        key="AD",
        board=BOARD,
        variant="default",
        macs=100,
        instructions=40,
        tflm_instructions=100,
        ratio=0.4,
        per_mac=0.4,
        tflm_per_mac=1.0,
        arena=10,
        scratch=2,
        tflm_arena=30,
        stack=8,
        tflm_stack=9,
        flash=50,
        tflm_flash=60,
        ram=20,
        tflm_ram=49,
        check="bit-exact",
        estimate=44,
        estimate_error=0.1,
        weights=5,
        model_code=6,
        runtime_code=7,
        test_input=1,
        runtime_data=0,
    )
    bad = dict(key="KWS", board=BOARD, variant="default", error="tflm-bench kws: QEMU timeout")
    half = dict(
        key="IC",
        board=BOARD,
        variant="default",
        error="tflm-bench ic: no GELU",
        ours=dict(macs=9, instructions=8, check="bit-exact"),
    )
    text = benchmarks.board_block(BOARD, [good, bad, half], {}, "python scripts/benchmarks.py")
    assert (
        "| AD | default | 100 | 40 | 100 | 0.400x | ≤ 0.40x: met | 0.40 / 1.00 | 12 / 30 | 8 / 9 | 50 / 60 | 20 / 49 | bit-exact | 44 (+10.0%) |"
        in text
    )
    assert "| KWS | default | | **error**: tflm-bench kws: QEMU timeout |" in text
    assert "| IC | default | 9 | 8 | **error**: tflm-bench ic: no GELU |" in text  # TFLM failed, ours is right
    assert "1 of 3 rows ran on both sides" in text and "within 10% of the measured count on 1 of 1" in text
    # a board's block is replaced in place; the rest of the page stays
    begin, end = benchmarks.markers(BOARD)
    doc = benchmarks.write_block("intro\n", BOARD, text) + "outro\n"
    assert benchmarks.write_block(doc, BOARD, "new\n") == f"intro\n\n{begin}\nnew\n{end}\noutro\n"


@pytest.mark.long
def test_hello_world_side_by_side_with_the_real_tflm_bench(hello, tmp_path):
    """The real kit on mps2_an386 (builds its library first when ~/.cache/tflm-bench has none)."""
    row = sbs.side_by_side(hello, BOARD, tmp_path / "w")
    report = json.loads((tmp_path / "w" / "tflm" / "result.json").read_text())
    assert row["check"] == "bit-exact"  # ours and TFLM's firmware both equal the interpreter
    assert row["tflm_instructions"] == report["instructions"] > 0
    assert row["ratio"] == row["instructions"] / row["tflm_instructions"]
    assert row["tflm_arena"] == report["arena_used_bytes"] > 0 and row["tflm_stack"] == report["stack_bytes"] > 0
    assert row["tflm_flash"] == report["text_bytes"] + report["data_bytes"] > row["flash"] > 0
    assert row["instructions"] > 0 and row["arena"] > 0 and row["stack"] > 0


def test_symbols_folded_into_one_body_are_counted_once(monkeypatch, tmp_path):
    """gcc's identical-code folding leaves several names at one address (the unrolled LSTM's 20
    steps share one body): the flash split counts the bytes once, so runtime code never goes below 0."""
    readelf = """\
Symbol table '.symtab' contains 5 entries:
   Num:    Value  Size Type    Bind   Vis      Ndx Name
     1: 00001001   516 FUNC    LOCAL  DEFAULT    1 net_lstm_1_8
     2: 00001001   516 FUNC    LOCAL  DEFAULT    1 net_lstm_1_29
     3: 00002000  1024 OBJECT  LOCAL  DEFAULT    1 net_lstm_1_8_weights
     4: 00002000  1024 OBJECT  LOCAL  DEFAULT    1 net_lstm_1_29_weights
     5: 00003000  0x800 OBJECT  LOCAL  DEFAULT    1 net_other_weights
"""

    class Done:
        stdout = readelf

    monkeypatch.setattr(sbs.subprocess, "run", lambda *a, **k: Done())
    assert sbs.symbol_sizes(tmp_path / "firmware.elf") == [
        ("net_lstm_1_8", "FUNC", 516),
        ("net_lstm_1_8_weights", "OBJECT", 1024),
        ("net_other_weights", "OBJECT", 2048),
    ]
