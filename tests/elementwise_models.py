"""Single-operator models for the elementwise (binary and n-ary) operator tests, and the CLI check
that a malformed one gives a one-line error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import model_builder
import numpy as np
from model_builder import ACTIVATIONS, ModelBuilder, _opts
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

model_builder.TYPES.setdefault("bool", fb.TensorType.BOOL)

# (scale, zero point) per dtype for input1, input2, output when a test gives none.
DEFAULT_QUANT = {"int8": [(0.05, -3), (0.1, 2), (0.08, 5)], "int16": [(0.0004, 0), (0.0007, 0), (0.0009, 0)]}


def _quant(dtype, q):
    return dict(scale=q[0], zero_point=q[1]) if dtype in ("int8", "int16") and q is not None else {}


def elementwise_model(
    kind, dtypes, shapes, out_dtype=None, out_shape=None, quant=None, options=None, consts=None
) -> bytes:
    """One operator with len(shapes) inputs. dtypes: one dtype for every input, or one per input.
    quant: (scale, zero point) per input then for the output (int8/int16 only). consts: {input
    position: array} for inputs that are constant tensors."""
    if isinstance(dtypes, str):
        dtypes = [dtypes] * len(shapes)
    out_dtype = out_dtype or dtypes[-1]
    if quant is None:
        default = DEFAULT_QUANT.get(out_dtype) or DEFAULT_QUANT.get(dtypes[-1]) or [None] * 3
        quant = [default[min(k, 1)] for k in range(len(shapes))] + [default[2]]
    consts = consts or {}
    b = ModelBuilder()
    tensors, inputs = [], []
    for k, (dtype, shape) in enumerate(zip(dtypes, shapes)):
        if k in consts:
            t = b.constant(f"c{k}", np.asarray(consts[k]).reshape(shape), dtype=dtype, **_quant(dtype, quant[k]))
        else:
            t = b.activation(f"x{k}", shape, dtype, **_quant(dtype, quant[k]))
            inputs.append(t)
        tensors.append(t)
    if out_shape is None:
        out_shape = list(np.broadcast_shapes(*map(tuple, shapes)))
    y = b.activation("y", out_shape, out_dtype, **_quant(out_dtype, quant[-1]))
    b.op(kind, tensors, [y], options)
    return b.finish(inputs, [y])


def activation_options(kind, activation="NONE"):
    """The options table of SUB/DIV/ADD/MUL with a fused activation."""
    name = {"SUB": "SubOptions", "DIV": "DivOptions", "ADD": "AddOptions", "MUL": "MulOptions"}[kind]
    return _opts(name, fusedActivationFunction=ACTIVATIONS[activation])


def side_by_side_model(ops) -> bytes:
    """One model with several independent single-operator graphs: ops is a list of
    (kind, dtypes, shapes, out_dtype, quant, options); every input and output is a model input/output."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, (kind, dtypes, shapes, out_dtype, quant, options) in enumerate(ops):
        if isinstance(dtypes, str):
            dtypes = [dtypes] * len(shapes)
        xs = []
        for k, (dtype, shape) in enumerate(zip(dtypes, shapes)):
            xs.append(b.activation(f"op{n}_x{k}", shape, dtype, **_quant(dtype, quant[k] if quant else None)))
        out_shape = list(np.broadcast_shapes(*map(tuple, shapes)))
        y = b.activation(f"op{n}_y", out_shape, out_dtype, **_quant(out_dtype, quant[-1] if quant else None))
        b.op(kind, xs, [y], options)
        inputs += xs
        outputs.append(y)
    return b.finish(inputs, outputs)


def random_array(dtype, shape, rng, low=None, high=None):
    if dtype == "float32":
        return rng.uniform(-4.0 if low is None else low, 4.0 if high is None else high, shape).astype(np.float32)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    info = np.iinfo(dtype)
    return rng.integers(
        info.min if low is None else low, info.max if high is None else high, shape, endpoint=True
    ).astype(dtype)


def cli_compile(model_bytes: bytes, tmp_path: Path) -> subprocess.CompletedProcess:
    path = Path(tmp_path) / "m.tflite"
    path.write_bytes(model_bytes)
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(Path(tmp_path) / "out")],
        capture_output=True,
        text=True,
    )


def assert_one_line_cli_error(model_bytes: bytes, tmp_path: Path, *fragments: str) -> None:
    """Compiling the model via the CLI fails with exit code 2 and one line naming the problem."""
    proc = cli_compile(model_bytes, tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def assert_rejected(model_bytes: bytes, tmp_path: Path, message: str) -> None:
    """Compiling the model (in process, fast) raises the one-line UnsupportedModelError naming
    operator 0 and the problem; the CLI turns that into one stderr line and exit code 2
    (checked once per module with assert_one_line_cli_error)."""
    import pytest
    from harness import compile_bytes

    from microcompiler.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match=message) as info:
        compile_bytes(model_bytes, tmp_path)
    assert "operator 0" in str(info.value) and "\n" not in str(info.value)
