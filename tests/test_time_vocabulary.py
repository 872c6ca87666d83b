"""One time vocabulary (issue 27 item 1): run, bench and analyze say the same thing in the same unit.

On an emulated board the device timer under QEMU's ``-icount shift=0`` is an exact instruction count:
``run`` (standalone) and ``bench`` measure the same instructions per inference, shown as the time
they take at the board's clock, and ``analyze``'s estimate is in that unit too, within its error.
"""

from __future__ import annotations

import json
import math

import pytest
from harness import cli
from test_tuning import needs_qemu

from microcompiler.boards import load_board, resolve_board
from microcompiler.timing import describe, estimated, format_duration, measured

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"
BOARD = "mps2_an386"


@pytest.mark.parametrize(
    "seconds,text",
    [
        (8.12e-7, "812 ns"),
        (1.99e-5, "19.9 µs"),
        (1.9424e-3, "1.94 ms"),
        (0.1246, "125 ms"),
        (2.514, "2.51 s"),
        (3e-9, "3.00 ns"),
        (float("nan"), "unknown"),
    ],
)
def test_durations_take_an_adaptive_unit_and_never_print_zero_for_small_times(seconds, text):
    assert format_duration(seconds) == text


def test_emulated_ticks_are_instructions_at_the_board_clock():
    board = load_board(BOARD)  # 25 MHz core, 25 MHz timer under -icount shift=0: 40 instructions per tick
    t = measured(1214, 25_000_000, board)
    assert t["instructions"] == 48_560 and math.isclose(t["seconds"], 48_560 / 25e6)
    assert describe(t) == "48,560 instructions (1.94 ms at 25 MHz, one per cycle)"
    assert describe(estimated(48_560, board)) == describe(t)  # an estimate reads the same way
    host = measured(18_227, 1_000_000_000, resolve_board("host"))
    assert describe(host) == "18.2 µs (host clock)" and host["instructions"] is None


@needs_qemu
def test_analyze_bench_and_run_agree_in_one_unit_on_a_board():
    analysis = json.loads(cli("analyze", TINY, "--board", BOARD, "--json").stdout)
    r = cli("bench", TINY, "--board", BOARD, "--json", "--number", "2", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    bench = json.loads(r.stdout)
    r = cli("run", TINY, "--board", BOARD, "--mode", "standalone", "--json")
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)
    measured_bench = bench["inference"]["time"]["instructions"]
    measured_run = run["time"]["instructions"]
    estimate = analysis["estimated_time"]["instructions"]
    # the same inference measured two ways: within the timer's resolution (40 instructions a tick)
    assert abs(measured_bench - measured_run) <= 2 * 40
    assert bench["inference"]["estimated_instructions"] == estimate
    assert abs(estimate - measured_bench) / measured_bench <= 0.20  # the cost model's error bound
    assert math.isclose(bench["inference"]["time"]["seconds"], measured_bench / 25e6)
    assert math.isclose(analysis["estimated_time"]["seconds"], estimate / 25e6)
    # every operator row: its short layer name, its measured instructions beside the estimate
    for op in bench["operators"]:
        assert op["layer_name"] and len(op["layer_name"]) <= 32 and op["time"]["instructions"] >= 0
        assert op["estimated_instructions"] is not None
    text = cli("bench", TINY, "--board", BOARD, "--number", "2", "--repeat", "1").stdout
    assert "instructions (" in text and "at 25 MHz, one per cycle) per inference" in text
    assert " conv1 " in text and "0.000 ms" not in text


def test_ticks_per_run_keeps_the_fraction_that_median_ticks_drops():
    """Many runs of a short function resolve it below one timer tick (scripts/fit_cost_model.py and the
    benchmark tables' short models read ``ticks_per_run``); ``median_ticks`` stays whole ticks."""
    from microcompiler.rpc.handles import TimeResult

    result = TimeResult(ticks=(392, 377, 380), number=25, timer_hz=25_000_000)
    assert result.ticks_per_run == 380 / 25 == 15.2
    assert result.median_ticks == 15
