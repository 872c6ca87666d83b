"""The smaller things a user trips on (issue 27 item 8), each with its test."""

from __future__ import annotations

import pytest
from harness import cli

from microcompiler.boards import load_board
from microcompiler.commands.tune import _print as print_tune
from microcompiler.targets import toolchain
from microcompiler.timing import measured

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


def test_analyze_prints_kernel_names_whole():
    out = cli("analyze", TINY, "--board", "mps2_an386").stdout
    assert "gemmlowp-exps-cached" in out and "im2col/dsp" in out
    assert "gemmlowp-exps-c " not in out


def test_flash_of_mlperf_firmware_points_to_the_mlperf_command(tmp_path, shared_models):
    project = tmp_path / "dut"
    r = cli(
        "create-project",
        shared_models / "mlperf_tiny/kws_ref_model.tflite",
        "--template",
        "mlperf",
        "--benchmark",
        "kws01",
        "--board",
        "mps2_an386",
        "-o",
        project,
    )
    assert r.returncode == 0, r.stderr
    r = cli("flash", project, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "MLPerf Tiny DUT firmware" in r.stderr
    assert "'microcompiler mlperf MODEL --board mps2_an386 --benchmark kws01'" in r.stderr


def test_the_tune_table_has_headers(capsys):
    print_tune(
        {
            "signatures": [
                {
                    "kind": "CONV_2D",
                    "operators": [0],
                    "status": "tuned",
                    "knobs": {"weights": "s16"},
                    "heuristic_ticks": 10.0,
                    "ticks": 9.0,
                }
            ],
            "heuristic_ticks": 10.0,
            "tuned_ticks": 9.0,
            "timer_hz": 25_000_000,
            "exact": True,
            "tuned": 1,
            "reused": 0,
            "seconds": 1.0,
            "log": "x.json",
            "heuristic_time": measured(10.0, 25_000_000, load_board("mps2_an386")),
            "tuned_time": measured(9.0, 25_000_000, load_board("mps2_an386")),
        }
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["operator", "indices", "status", "setting"]
    # the whole inference in the shared time vocabulary (instructions at the board's clock)
    assert "inference 400 instructions (16.0 µs at 25 MHz, one per cycle) -> 360 instructions" in lines[-1]


def test_the_build_line_labels_the_board_memories(monkeypatch, tmp_path):
    monkeypatch.setattr(toolchain, "firmware_size", lambda elf: (7568, 9976))
    lines: list[str] = []
    toolchain.measured_build(load_board("mps2_an386"), tmp_path / "firmware.elf", lines.append)
    board = load_board("mps2_an386")
    assert lines == [
        f"built {tmp_path / 'firmware.elf'}: flash 7,568 B, RAM 9,976 B (the board has flash "
        f"{board.flash.size:,} B, RAM {board.ram.size:,} B)"
    ]


@pytest.mark.parametrize("args", [["--version"]])
def test_version(args):
    r = cli(*args)
    assert r.returncode == 0 and r.stdout.startswith("microcompiler ")


def test_a_random_loop_count_is_pointed_out_before_the_wait():
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "microcompiler.cli", "run", "examples/control_flow/while_int8.tflite"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert first.startswith("note: the model loops (WHILE) and its input 0 ('count') is a seeded random int32")
    assert "pass your own input with --input X.npy" in first


def test_bench_chart_bars_carry_short_layer_names_in_instructions():
    from microcompiler.report.page import _time_chart

    board = load_board("mps2_an386")
    ops = [
        {
            "index": k,
            "kind": "FULLY_CONNECTED",
            "function": f"m_fc{k}",
            "layer_name": f"dense_{k}",
            "ticks": t,
            "time": measured(t, 25_000_000, board),
        }
        for k, t in enumerate((100, 250))
    ]
    svg = _time_chart(None, {"operators": ops})
    assert "0 dense_0" in svg and "1 dense_1" in svg and "FULLY_CONNECTED" not in svg
    assert "instr." in svg and "10,000" in svg  # 250 ticks x 40 instructions
