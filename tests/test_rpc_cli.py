"""The command line of host-driven mode on the host board: run --mode host-driven and bench."""

from __future__ import annotations

import json

import pytest
from conftest import SHARED_MODELS

from microcompiler.api import connect
from microcompiler.cli import main
from microcompiler.errors import DeviceError

HELLO = str(SHARED_MODELS / "tflm/hello_world_int8.tflite")


def test_run_host_driven_prints_the_same_outputs_as_standalone(capsys):
    assert main(["run", HELLO, "--json"]) == 0
    standalone = json.loads(capsys.readouterr().out)
    assert main(["run", HELLO, "--mode", "host-driven", "--json"]) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert report["outputs"] == standalone["outputs"] and report["mode"] == "host-driven"
    assert report["timer_hz"] == 1_000_000_000 and len(report["operator_ticks"]) == 3
    assert "building the host RPC server" in out.err


def test_run_host_driven_text_output(capsys):
    assert main(["run", HELLO, "--mode", "host-driven"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("output0 int8[1, 1]:") and "sum of 3 operators, host-driven" in out


def test_bench_reports_inference_and_operator_times(capsys):
    assert main(["bench", HELLO, "--number", "3", "--repeat", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "hello_world_int8" and report["timer_hz"] == 1_000_000_000
    # on the host: the host clock's time, analyze's estimate beside it (no exact instruction count to compare)
    assert set(report["inference"]) == {
        "ticks",
        "ticks_per_run",
        "seconds",
        "ticks_per_run_each_repeat",
        "time",
        "estimated_instructions",
    }
    # ticks per run keeps the fraction of the median repeat's total over its 3 runs; ticks drops it
    inference = report["inference"]
    assert inference["ticks"] == int(inference["ticks_per_run"]) and inference["ticks_per_run"] > 0
    assert all(int(op["ticks_per_run"]) == op["ticks"] for op in report["operators"])
    assert report["inference"]["time"]["basis"] == "host clock" and report["inference"]["time"]["instructions"] is None
    assert [op["index"] for op in report["operators"]] == [0, 1, 2]
    assert report["operator_ticks_total"] == sum(op["ticks"] for op in report["operators"])
    # the RAM peak: the second FULLY_CONNECTED reads one 16-byte activation and writes another
    peak = report["memory_peak"]
    assert (peak["bytes"], peak["step"], peak["kind"]) == (32, 1, "FULLY_CONNECTED")
    assert [t["bytes"] for t in peak["tensors"]] == [16, 16]
    assert main(["bench", HELLO, "--number", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert " per inference (median of 1 x 2 runs)" in out and "RAM peak: 32 B live at operator 1 FULLY_CONNECTED" in out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["bench", HELLO, "--number", "0"], "--number 0: give a whole number of at least 1"),
        (["bench", HELLO, "--board", "no_such_board"], "unknown board 'no_such_board'"),
        (["run", HELLO, "--mode", "host-driven", "--port", "/dev/ttyUSB9"], "--port is for boards"),
    ],
)
def test_bad_arguments_give_one_line_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_connect_to_a_missing_serial_port_is_a_clear_error():
    with pytest.raises(DeviceError, match="cannot open serial port /dev/does-not-exist"):
        connect(port="/dev/does-not-exist")
