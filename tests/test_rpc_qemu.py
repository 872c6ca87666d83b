"""Host-driven execution on emulated boards: QEMU, its UART on a pty, pyserial, the RPC server firmware.

Every shared model runs on both boards (the issue's acceptance): host-driven over the pty must equal the
standalone firmware's output on the same board (six pairs in the default suite, all in `-m long`).
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import SHARED_MODELS

from microcompiler.api import open_model
from microcompiler.boards import load_board
from microcompiler.cli import main
from microcompiler.compiler import compile_model
from microcompiler.inputs import random_inputs
from microcompiler.project import run_on_board
from microcompiler.rpc import DeviceResetError
from microcompiler.transport.qemu import qemu_system_reset

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-arm") is None
    or shutil.which("arm-none-eabi-gcc") is None
    or shutil.which("cmake") is None
    or shutil.which("ninja") is None,
    reason="needs qemu-system-arm, arm-none-eabi-gcc, cmake and ninja",
)

ALL = sorted(p.relative_to(SHARED_MODELS).as_posix() for p in SHARED_MODELS.rglob("*.tflite"))
# The default suite runs each kind of model (int8 convolutions, int8 fully connected, float, int16x8)
# once per board; every other (board, model) pair is a `long` test.
DEFAULT_CASES = {
    ("mps2_an386", "mlperf_tiny/kws_ref_model.tflite"),
    ("mps2_an386", "tflm/hello_world_float.tflite"),
    ("mps2_an386", "tflm/seanet/conv0.tflite"),
    ("mps3_an547", "mlperf_tiny/pretrainedResnet_quant.tflite"),
    ("mps3_an547", "mlperf_tiny/ad01_int8.tflite"),
    ("mps3_an547", "tflm/seanet/conv3.tflite"),
}
CASES = [
    pytest.param(b, m, marks=() if (b, m) in DEFAULT_CASES else pytest.mark.long)
    for b in ("mps2_an386", "mps3_an547")
    for m in ALL
]


@pytest.mark.parametrize("board_name,model", CASES)
def test_host_driven_on_qemu_matches_standalone_on_qemu(board_name, model, tmp_path):
    board = load_board(board_name)
    library = compile_model(SHARED_MODELS / model, features=board.cpu.features)
    x = random_inputs(library.info.inputs, seed=1)
    _, _, standalone = run_on_board(library, board, tmp_path / "standalone", input=x, log=lambda _: None)
    with open_model(library, board, project_dir=tmp_path / "rpc") as session:
        assert session.device.timer_hz == board.timer.get("hz")
        assert any("RPC server ready" in line for line in session.logs + session.poll_logs(0.05))
        with session.executor() as ex:
            got = ex(*x)
    assert [a.tobytes() for a in got] == [b.tobytes() for b in standalone.outputs]


def test_cli_run_host_driven_on_qemu_matches_the_standalone_run(capsys):
    model = str(SHARED_MODELS / "mlperf_tiny/ad01_int8.tflite")
    assert main(["run", model, "--board", "mps2_an386", "--json"]) == 0
    standalone = json.loads(capsys.readouterr().out)
    assert main(["run", model, "--board", "mps2_an386", "--mode", "host-driven", "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # stdout is the JSON alone
    assert "building" in captured.err and "starting QEMU" in captured.err  # progress went to stderr
    assert report["mode"] == "host-driven" and report["outputs"] == standalone["outputs"]
    assert report["timer_hz"] == 25_000_000 and len(report["operator_ticks"]) == 10


def test_cli_bench_on_qemu(capsys):
    model = str(SHARED_MODELS / "tflm/hello_world_int8.tflite")
    assert main(["bench", model, "--board", "mps2_an386", "--number", "5", "--repeat", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["timer_hz"] == 25_000_000 and report["number"] == 5 and report["repeat"] == 2
    assert report["inference"]["ticks"] > 0 and len(report["inference"]["ticks_per_run_each_repeat"]) == 2
    assert [op["kind"] for op in report["operators"]] == ["FULLY_CONNECTED"] * 3
    assert all(op["ticks"] > 0 for op in report["operators"])
    # QEMU runs with -icount shift=0: device time is deterministic
    assert len(set(report["inference"]["ticks_per_run_each_repeat"])) == 1


def test_a_qemu_board_reset_mid_session_is_reported_and_a_new_session_works(tmp_path):
    board = load_board("mps2_an386")
    library = compile_model(SHARED_MODELS / "tflm/hello_world_int8.tflite", features=board.cpu.features)
    x = random_inputs(library.info.inputs, seed=2)
    with open_model(library, board, project_dir=tmp_path / "rpc", timeout=3.0) as session:
        with session.executor() as ex:
            want = ex(*x)
        buf = session.alloc(8)
        qemu_system_reset(session.transport)
        with pytest.raises(DeviceResetError, match="device reset"):
            buf.read()
        session.reconnect()
        with session.executor() as ex:
            assert [a.tobytes() for a in ex(*x)] == [b.tobytes() for b in want]
