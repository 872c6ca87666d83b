"""The MLPerf Tiny keyword-spotting model (../shared/models/mlperf_tiny/kws_ref_model.tflite) on Zephyr
3.7.1 in QEMU, every emulated board (mps2_an386 and mps2_an500 with the project's own board
definition), standalone and host-driven: the outputs equal the TFLite Micro interpreter's (the
pinned tflite-micro, tests/oracle.py), bit for bit. Long: eight Zephyr builds
(`pytest -m long tests/test_zephyr_kws.py`); the default suite builds one firmware per board in
tests/test_zephyr.py.
"""

import numpy as np
import pytest
from oracle import Oracle

from microcompiler.compiler import compile_model
from microcompiler.inputs import random_inputs
from microcompiler.targets import zephyr
from microcompiler.zephyr import workspace

BOARDS = ["mps2_an385", "mps2_an386", "mps2_an500", "mps3_an547"]


@pytest.fixture(scope="module")
def kws(shared_models):
    return shared_models / "mlperf_tiny" / "kws_ref_model.tflite"


@pytest.mark.long
@pytest.mark.parametrize("mode", ["standalone", "host-driven"])
@pytest.mark.parametrize("board_name", BOARDS)
def test_kws_on_zephyr_is_bit_exact_with_tflm(board_name, mode, kws, tmp_path):
    workspace.require_west()
    zephyr.zephyr_base()
    library = compile_model(kws)
    inputs = random_inputs(library.info.inputs, seed=7)
    want = Oracle(kws.read_bytes()).run(inputs)
    _, _, result = zephyr.run_on_board(
        library, board_name, tmp_path / "p", mode=mode, input=inputs, log=lambda _: None, timeout=900
    )
    assert len(result.outputs) == len(want)
    for got, expected in zip(result.outputs, want):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    assert result.ticks > 0
