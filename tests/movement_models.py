"""Single-operator models for the data-movement family (STRIDED_SLICE, SLICE, TRANSPOSE, GATHER,
GATHER_ND, SPLIT, SPLIT_V, PACK, UNPACK, REVERSE_V2, SHAPE, BROADCAST_TO, BROADCAST_ARGS, FILL,
SQUEEZE, EXPAND_DIMS), shared by the tests/test_op_<module>.py files."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import model_builder
import numpy as np
from model_builder import ModelBuilder, _opts
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

model_builder.TYPES.setdefault("bool", fb.TensorType.BOOL)

# Quantization used for int8/int16 activations in these tests (TFLM copies the raw values).
QUANT = {"int8": (0.05, -3), "int16": (0.001, 0)}
ALL_TYPES = ("int8", "int16", "int32", "int64", "float32", "bool")


def q(dtype, quant=None):
    """(scale, zero_point) keyword arguments for an activation of ``dtype``."""
    scale, zp = quant or QUANT.get(dtype, (None, None))
    return {"scale": scale, "zero_point": zp}


def add_single_op(
    b: ModelBuilder,
    kind,
    x_shape,
    dtype,
    consts,
    out_shapes,
    options=None,
    const_first=False,
    out_dtype=None,
    extra_inputs=(),
    in_quant=None,
    out_quant=None,
    prefix="",
):
    """Add one operator reading activation x (plus the constant int arrays ``consts``), writing
    ``out_shapes``; ``const_first`` puts the constants before x (SPLIT's axis). Returns (model
    inputs, model outputs)."""
    x = b.activation(f"{prefix}x", x_shape, dtype, **q(dtype, in_quant))
    cs = [b.constant(f"{prefix}c{k}", np.asarray(c)) for k, c in enumerate(consts)]
    extra = [b.activation(f"{prefix}x{k + 1}", s, d, **q(d)) for k, (s, d) in enumerate(extra_inputs)]
    out_dtype = out_dtype or dtype
    ys = [b.activation(f"{prefix}y{k}", s, out_dtype, **q(out_dtype, out_quant)) for k, s in enumerate(out_shapes)]
    inputs = cs + [x] + extra if const_first else [x] + cs + extra
    b.op(kind, inputs, ys, options)
    return [x] + extra, ys


def single_op(kind, x_shape, dtype, consts, out_shapes, options=None, **kwargs):
    """A model of one operator (see ``add_single_op``)."""
    b = ModelBuilder()
    inputs, outputs = add_single_op(b, kind, x_shape, dtype, consts, out_shapes, options, **kwargs)
    return b.finish(inputs, outputs)


def side_by_side(cases: list[tuple]) -> bytes:
    """One model holding several independent single operators, each (kind, x_shape, dtype, consts,
    out_shapes, options[, kwargs]) with its own inputs and outputs: a sweep compiled and compared
    with TFLM once (output k of the model belongs to the case that added it)."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, case in enumerate(cases):
        kwargs = case[6] if len(case) > 6 else {}
        i, o = add_single_op(b, *case[:6], prefix=f"case{n}_", **kwargs)
        inputs += i
        outputs += o
    return b.finish(inputs, outputs)


def strided_slice_options(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, offset=False):
    return _opts(
        "StridedSliceOptions",
        beginMask=begin_mask,
        endMask=end_mask,
        ellipsisMask=ellipsis_mask,
        newAxisMask=new_axis_mask,
        shrinkAxisMask=shrink_axis_mask,
        offset=offset,
    )


def gather_options(axis=0, batch_dims=0):
    return _opts("GatherOptions", axis=axis, batchDims=batch_dims)


def split_options(n):
    return _opts("SplitOptions", numSplits=n)


def split_v_options(n):
    return _opts("SplitVOptions", numSplits=n)


def pack_options(n, axis):
    return _opts("PackOptions", valuesCount=n, axis=axis)


def unpack_options(n, axis):
    return _opts("UnpackOptions", num=n, axis=axis)


def squeeze_options(dims):
    return _opts("SqueezeOptions", squeezeDims=list(dims))


def shape_options(out_type):
    return _opts("ShapeOptions", outType=model_builder.TYPES[out_type])


def cli_compile(model_bytes: bytes, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run ``microcompiler compile`` on the model as a user would."""
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "m.tflite"
    path.write_bytes(model_bytes)
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )


def cli_compile_in_process(model_bytes: bytes, tmp_path: Path) -> subprocess.CompletedProcess:
    """``microcompiler compile`` through the CLI's own ``main`` (what ``python -m microcompiler.cli``
    runs), without starting an interpreter: a bug would raise here instead of printing a traceback."""
    from microcompiler.cli import main

    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "m.tflite"
    path.write_bytes(model_bytes)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["compile", str(path), "-o", str(tmp_path / "out")])
    return subprocess.CompletedProcess([], code, out.getvalue(), err.getvalue())


def assert_clean_rejection(model_bytes: bytes, tmp_path: Path, match: str, subprocess_run: bool = False) -> str:
    """The CLI refuses the model with one line on stderr, exit code 2, no traceback."""
    result = (cli_compile if subprocess_run else cli_compile_in_process)(model_bytes, tmp_path)
    err = result.stderr.strip()
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(err.splitlines()) == 1, err
    assert match in err, err
    return err


def run_ours(
    model_bytes: bytes,
    tmp_path: Path,
    inputs: list[list[np.ndarray]] | None = None,
    n_inputs: int = 2,
    sanitize: bool = False,
) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """Compile and run the model on the host (for what TFLM refuses but TensorFlow Lite defines):
    (input sets, output sets)."""
    from harness import compile_bytes

    from microcompiler.host import HostProgram
    from microcompiler.inputs import random_inputs

    library = compile_bytes(model_bytes, tmp_path)
    if inputs is None:
        inputs = [random_inputs(library.info.inputs, seed=s) for s in range(n_inputs)]
    results = HostProgram(library, Path(tmp_path) / "build", sanitize=sanitize).run(inputs)
    return inputs, [r.outputs for r in results]
