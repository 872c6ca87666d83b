"""Shared builders for the activation and normalisation operator tests (ELU, HARD_SWISH, LEAKY_RELU,
PRELU, TANH, LOG_SOFTMAX, L2_NORMALIZATION): single-operator models and input sets that cover every
int8 value at once."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from model_builder import ModelBuilder, _opts

ROOT = Path(__file__).resolve().parents[1]
ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


def unary_model(kind, shape, dtype, in_q=(None, None), out_q=(None, None), options=None, out_dtype=None):
    """One operator with one input and one output of the same shape."""
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, scale=in_q[0], zero_point=in_q[1])
    y = b.activation("y", shape, out_dtype or dtype, scale=out_q[0], zero_point=out_q[1])
    b.op(kind, [x], [y], options)
    return b.finish([x], [y])


def every_int8_value(shape, seed=0):
    """Input sets over ``shape`` (256 elements or more) that together hold every int8 value: the
    ordered ramp, then two shuffles of it."""
    size = int(np.prod(shape))
    assert size >= 256, "shape must hold all 256 int8 values"
    rng = np.random.default_rng(seed)
    sets = []
    for k in range(3):
        values = np.resize(ALL_INT8, size)
        if k:
            values = rng.permutation(values)
        sets.append([values.reshape(shape).astype(np.int8)])
    return sets


def random_sets(shape, dtype, n=4, seed=0, float_range=8.0):
    """n seeded input sets: uniform over the dtype (floats in +-float_range), and one of extremes."""
    rng = np.random.default_rng(seed)
    sets = []
    for k in range(n):
        if dtype == "float32":
            x = rng.uniform(-float_range, float_range, shape) if k < n - 1 else \
                rng.choice([-float_range, -1.0, -0.0, 0.0, 1e-3, 1.0, float_range], shape)
            sets.append([x.astype(np.float32)])
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, shape, endpoint=True) if k < n - 1 else \
                rng.choice([info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], shape)
            sets.append([x.astype(dtype)])
    return sets


def leaky_relu_options(alpha):
    return _opts("LeakyReluOptions", alpha=alpha)


def l2_norm_options(activation=0):
    return _opts("L2NormOptions", fusedActivationFunction=activation)


def cli_compile(model_bytes: bytes, tmp_path: Path) -> subprocess.CompletedProcess:
    """``microcompiler compile`` on a model file, as a user runs it."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "bad.tflite"
    path.write_bytes(model_bytes)
    return subprocess.run([sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit code 2 and a single stderr line naming the problem, without a traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
