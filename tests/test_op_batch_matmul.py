"""BATCH_MATMUL against the TFLM oracle: float32, int8, int16; adj_x/adj_y; batch broadcasting (ranks 2
to 5); constant or activation right-hand side; malformed shapes refused in one line."""

import subprocess
import sys

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from model_builder import ModelBuilder, _opts
from model_merge import assert_cases_match_oracle


def batch_matmul_options(adj_x=False, adj_y=False):
    return _opts("BatchMatMulOptions", adjX=adj_x, adjY=adj_y)


def product_shape(lhs, rhs, adj_x, adj_y):
    a, b = list(lhs[:-2]), list(rhs[:-2])
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    m = lhs[-1] if adj_x else lhs[-2]
    n = rhs[-2] if adj_y else rhs[-1]
    return [max(x, y) for x, y in zip(a, b)] + [m, n]


QUANT = {
    "int8": dict(lhs=(0.05, -7), rhs=(0.03, 11), out=(0.4, 5)),
    "int16": dict(lhs=(0.0005, 0), rhs=(0.0004, 0), out=(0.004, 0)),
}


def batch_matmul_model(
    dtype, lhs_shape, rhs_shape, adj_x=False, adj_y=False, constant_rhs=False, seed=0, out_shape=None, quant=None
):
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    q = quant or QUANT.get(dtype)
    if dtype == "float32":
        lhs = b.activation("lhs", lhs_shape, dtype)
    else:
        lhs = b.activation("lhs", lhs_shape, dtype, scale=q["lhs"][0], zero_point=q["lhs"][1])
    if constant_rhs:
        if dtype == "float32":
            rhs = b.constant("rhs", rng.normal(0, 1, rhs_shape).astype(np.float32))
        else:
            info = np.iinfo(dtype)
            data = rng.integers(info.min, info.max, rhs_shape, endpoint=True).astype(dtype)
            rhs = b.constant("rhs", data, scale=q["rhs"][0], zero_point=q["rhs"][1])
    elif dtype == "float32":
        rhs = b.activation("rhs", rhs_shape, dtype)
    else:
        rhs = b.activation("rhs", rhs_shape, dtype, scale=q["rhs"][0], zero_point=q["rhs"][1])
    shape = out_shape or product_shape(lhs_shape, rhs_shape, adj_x, adj_y)
    if dtype == "float32":
        y = b.activation("y", shape, dtype)
    else:
        y = b.activation("y", shape, dtype, scale=q["out"][0], zero_point=q["out"][1])
    b.op("BATCH_MATMUL", [lhs, rhs], [y], batch_matmul_options(adj_x, adj_y))
    return b.finish([lhs] if constant_rhs else [lhs, rhs], [y])


CASES = {
    "f32_2d": ("float32", [3, 5], [5, 4], {}),
    "f32_adj_x": ("float32", [2, 5, 3], [2, 5, 4], dict(adj_x=True)),
    "f32_adj_y_const": ("float32", [2, 3, 5], [4, 5], dict(adj_y=True, constant_rhs=True)),
    "f32_adj_xy_bcast": ("float32", [2, 1, 5, 3], [3, 4, 5], dict(adj_x=True, adj_y=True)),
    "f32_5d": ("float32", [2, 1, 3, 2, 4], [1, 2, 1, 4, 3], {}),
    "f32_1elem": ("float32", [1, 1], [1, 1], {}),
    "i8_2d": ("int8", [3, 7], [7, 5], {}),
    "i8_bcast_lhs": ("int8", [1, 4, 6], [3, 6, 2], {}),
    "i8_bcast_mixed_adj_y": ("int8", [2, 1, 3, 6], [1, 3, 5, 6], dict(adj_y=True)),
    "i8_const_rhs_adj_x": ("int8", [2, 9, 4], [9, 3], dict(adj_x=True, constant_rhs=True)),
    "i8_1elem": ("int8", [1, 1], [1, 1], {}),
    "i16_3d": ("int16", [2, 4, 5], [2, 5, 3], {}),
    "i16_adj_xy_const_bcast": ("int16", [3, 2, 6, 4], [1, 5, 6], dict(adj_x=True, adj_y=True, constant_rhs=True)),
}


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
def test_batch_matmul_matches_tflm(tmp_path, dtype):
    """The cases of one type side by side in one model (one compile), each output checked."""
    names = [n for n, case in CASES.items() if case[0] == dtype]
    library = assert_cases_match_oracle(
        {n: batch_matmul_model(*CASES[n][:3], **CASES[n][3]) for n in names}, tmp_path, n_inputs=3
    )
    assert len(library.metadata["outputs"]) == len(names)


def test_batch_matmul_int8_zero_points_zero_and_extremes(tmp_path):
    quant = dict(lhs=(0.1, -128), rhs=(0.07, 127), out=(1.5, -128))
    assert_matches_oracle(batch_matmul_model("int8", [2, 3, 40], [2, 40, 3], quant=quant), tmp_path, n_inputs=2)
    quant = dict(lhs=(0.1, 0), rhs=(0.07, 0), out=(0.9, 0))
    assert_matches_oracle(batch_matmul_model("int8", [4, 8], [8, 3], quant=quant), tmp_path / "z", n_inputs=2)


def test_batch_matmul_sanitized(tmp_path):
    assert_matches_oracle(
        batch_matmul_model("int8", [2, 1, 3, 6], [1, 3, 5, 6], adj_y=True), tmp_path, n_inputs=2, sanitize=True
    )
    assert_matches_oracle(batch_matmul_model("int16", [2, 4, 5], [5, 3]), tmp_path / "i16", n_inputs=2, sanitize=True)


def _cli_compile(model: bytes, tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "args,kwargs,message",
    [
        (("float32", [3, 5], [4, 4]), dict(out_shape=[3, 4]), "the inner dimensions differ"),
        (("int8", [2, 3, 5], [3, 5, 4]), dict(out_shape=[2, 3, 4]), "do not broadcast"),
        (("float32", [3, 5], [5, 4]), dict(out_shape=[3, 5]), "is not the product's [3, 4]"),
        (("float32", [3, 5], [5, 4]), dict(adj_x=True, out_shape=[3, 4]), "the inner dimensions differ"),
        (
            ("int16", [3, 5], [5, 4]),
            dict(quant=dict(lhs=(0.1, 3), rhs=(0.1, 0), out=(0.1, 0))),
            "int16 zero points must be 0",
        ),
    ],
)
def test_batch_matmul_malformed_is_one_line(tmp_path, args, kwargs, message):
    result = _cli_compile(batch_matmul_model(*args, **kwargs), tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "BATCH_MATMUL" in lines[0] and message in lines[0], lines[0]


@needs_board_tools
def test_batch_matmul_int8_on_board(tmp_path):
    """int8 BATCH_MATMUL (broadcast batch, adj_y) standalone on mps2_an386 (QEMU), bit-exact with TFLM."""
    assert_matches_oracle_on_board(batch_matmul_model("int8", [2, 1, 3, 6], [1, 3, 5, 6], adj_y=True), tmp_path)
