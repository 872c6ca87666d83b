"""Issue 36's acceptance on the boards, for the committed models the other board tests do not run
(long tests): the dense autoencoder, QDQ int8 and float32, and the float MobileNetV2-0.35 give ONNX
Runtime's bits on the host and the host's on mps2_an386 and mps3_an547. The float MobileNetV2 needs a
903 KB arena, more than mps3_an547's free RAM: there it is refused in one line, before a build.
(ds_cnn, resnet8 and small_cnn QDQ: test_onnx_qdq.py; MobileNetV2 QDQ: its end-to-end test; the float
DS-CNN and ResNet-8: test_onnx_ops.py and test_onnx_residual.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest
from onnx_models import MODELS, assert_same_bits, inputs_for, ours_and_onnxruntime

from microcompiler.project import run_on_board

pytestmark = pytest.mark.long


@pytest.mark.parametrize(
    "name,boards",
    [
        ("dense_autoencoder_qdq_int8", ("mps2_an386", "mps3_an547")),
        ("dense_autoencoder_float32", ("mps2_an386", "mps3_an547")),
        ("mobilenet_v2_035_96_float32", ("mps2_an386",)),
    ],
)
def test_committed_model_on_boards_equals_the_host_and_onnxruntime(tmp_path, name, boards):
    path = MODELS / f"{name}.onnx"
    _, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=1)
    for got, want in zip(ours[0], theirs[0], strict=True):
        assert_same_bits(got, want, f"{name}: host vs ONNX Runtime")
    inputs = inputs_for(path, 1)[0]
    for board in boards:
        _, _, run = run_on_board(path, board, tmp_path / board, input=inputs, log=lambda _: None)
        for got, want in zip(run.outputs, ours[0], strict=True):
            assert_same_bits(got, want, f"{name}: {board} vs the host")


def test_float_mobilenet_v2_too_big_for_the_m55_is_one_line(tmp_path):
    path = MODELS / "mobilenet_v2_035_96_float32.onnx"
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "run", str(path), "--board", "mps3_an547", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.count("\n") == 1 and "no memory plan fits the board's free RAM" in proc.stderr, proc.stderr
