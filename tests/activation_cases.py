"""Shared builders for the activation and normalisation operator tests (ELU, HARD_SWISH, LEAKY_RELU,
PRELU, TANH, LOG_SOFTMAX, L2_NORMALIZATION): single-operator models and input sets that cover every
int8 value at once."""

from __future__ import annotations

import os
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


def side_by_side_model(kind, cases, options=None):
    """One model holding one ``kind`` operator per case, each with its own input and output:
    cases are (shape, dtype, (in scale, in zero point), (out scale, out zero point)) or the same
    with the operator's options appended. One compile and one oracle run then cover them all."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for k, case in enumerate(cases):
        shape, dtype, in_q, out_q = case[:4]
        x = b.activation(f"x{k}", shape, dtype, scale=in_q[0], zero_point=in_q[1])
        y = b.activation(f"y{k}", shape, dtype, scale=out_q[0], zero_point=out_q[1])
        b.op(kind, [x], [y], case[4] if len(case) > 4 else options)
        inputs.append(x)
        outputs.append(y)
    return b.finish(inputs, outputs)


def case_inputs(cases, n_sets=3, seed=0, float_range=8.0):
    """Input sets for side_by_side_model: int8 inputs of 256+ elements get every int8 value (ramp,
    then shuffles), the others seeded random values with a set of extremes last."""
    per_case = []
    for k, (shape, dtype) in enumerate((c[0], c[1]) for c in cases):
        if dtype == "int8" and int(np.prod(shape)) >= 256:
            per_case.append([s[0] for s in every_int8_value(shape, seed + k)][:n_sets])
        else:
            per_case.append([s[0] for s in random_sets(shape, dtype, n_sets, seed + k, float_range)])
    return [[values[j] for values in per_case] for j in range(n_sets)]


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
            x = (
                rng.uniform(-float_range, float_range, shape)
                if k < n - 1
                else rng.choice([-float_range, -1.0, -0.0, 0.0, 1e-3, 1.0, float_range], shape)
            )
            sets.append([x.astype(np.float32)])
        else:
            info = np.iinfo(dtype)
            x = (
                rng.integers(info.min, info.max, shape, endpoint=True)
                if k < n - 1
                else rng.choice([info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], shape)
            )
            sets.append([x.astype(dtype)])
    return sets


def leaky_relu_options(alpha):
    return _opts("LeakyReluOptions", alpha=alpha)


def l2_norm_options(activation=0):
    return _opts("L2NormOptions", fusedActivationFunction=activation)


def assert_cli_rejects(model_bytes: bytes, tmp_path: Path, *fragments: str) -> None:
    """``microcompiler compile`` on the model, as a user runs it: exit code 2 and one stderr line
    naming the problem, no traceback, no output directory."""
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "bad.tflite"
    path.write_bytes(model_bytes)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("microcompiler: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert not (tmp_path / "out").exists()
