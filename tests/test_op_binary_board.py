"""The binary/n-ary elementwise family on an emulated Cortex-M4 board (mps2_an386, QEMU): one model
holding one instance of each operator, in int8 where TFLM runs it (FLOOR_DIV/FLOOR_MOD: float32,
LOGICAL_AND/OR: bool; ADD/MUL also in int32), run standalone once and compared with TFLM."""

import numpy as np
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from elementwise_models import activation_options, random_array, side_by_side_model

Q = [(0.05, -3), (0.1, 2), (0.08, 5)]
OPS = [
    ("SUB", "int8", [[2, 3, 8], [8]], "int8", Q, activation_options("SUB", "RELU")),
    ("DIV", "int8", [[2, 3, 8], [2, 3, 8]], "int8", Q, None),
    ("MAXIMUM", "int8", [[2, 3, 8], [3, 1]], "int8", Q, None),
    ("MINIMUM", "int8", [[1], [2, 3, 8]], "int8", Q, None),
    ("SQUARED_DIFFERENCE", "int8", [[2, 3, 8], [2, 1, 8]], "int8", Q, None),
    ("EQUAL", "int8", [[2, 3, 8], [8]], "bool", [(0.5, 127), (0.25, -128), None], None),
    ("NOT_EQUAL", "int8", [[2, 3, 8], [8]], "bool", Q, None),
    ("GREATER", "int8", [[2, 3, 8], [3, 1]], "bool", Q, None),
    ("GREATER_EQUAL", "int8", [[2, 3, 8], [2, 3, 8]], "bool", Q, None),
    ("LESS", "int8", [[2, 3, 8], [1]], "bool", Q, None),
    ("LESS_EQUAL", "int8", [[3, 1], [2, 3, 8]], "bool", Q, None),
    ("SELECT_V2", ["bool", "int8", "int8"], [[2, 3, 1], [8], [2, 3, 8]], "int8", [None, Q[0], Q[0], Q[0]], None),
    ("ADD_N", "int8", [[2, 3, 8]] * 3, "int8", [Q[0]] * 3 + [Q[2]], None),
    ("FLOOR_DIV", "float32", [[2, 3, 8], [8]], "float32", None, None),
    ("FLOOR_MOD", "float32", [[2, 3, 8], [8]], "float32", None, None),
    ("LOGICAL_AND", "bool", [[2, 3, 8], [8]], "bool", None, None),
    ("LOGICAL_OR", "bool", [[2, 1, 8], [3, 1]], "bool", None, None),
    ("ADD", "int32", [[2, 3, 8], [8]], "int32", None, None),
    ("MUL", "int32", [[2, 3, 8], [8]], "int32", None, activation_options("MUL", "RELU")),
]


@needs_board_tools
def test_family_on_board_matches_tflm(tmp_path):
    rng = np.random.default_rng(11)
    inputs = []
    for kind, dtypes, shapes, _, quant, _ in OPS:
        dtypes = [dtypes] * len(shapes) if isinstance(dtypes, str) else dtypes
        arrays = [random_array(d, s, rng) for d, s in zip(dtypes, shapes)]
        if kind in ("DIV", "FLOOR_DIV", "FLOOR_MOD"):  # divisors away from 0 (int8: the zero point)
            zero = quant[1][1] if quant else 0
            arrays[1] = np.where(arrays[1] == zero, zero + 1, arrays[1]).astype(arrays[1].dtype)
        inputs += arrays
    run = assert_matches_oracle_on_board(side_by_side_model(OPS), tmp_path, inputs=inputs)
    assert len(run.outputs) == len(OPS)
