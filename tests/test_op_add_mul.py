"""ADD and MUL against the TFLM oracle: int8, int16, int32, float32; broadcasting; activations; in-place."""

import subprocess
from pathlib import Path

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, add_options, mul_options
from oracle import Oracle

from microcompiler.errors import UnsupportedModelError
from microcompiler.host import SANITIZE_CFLAGS, STRICT_CFLAGS, compiler
from microcompiler.inputs import random_inputs

# Quantization (scale, zero point) per dtype, for the three tensors: input1, input2, output.
Q8 = [(0.05, -3), (0.1, 2), (0.08, 5)]
Q16 = [(0.0004, 0), (0.0007, 0), (0.0009, 0)]


def binary_model(
    kind,
    dtype,
    shape1,
    shape2,
    activation="NONE",
    quant=None,
    const1=None,
    const2=None,
    pot_scale_int16=False,
    out_shape=None,
):
    """One ADD/MUL operator. constK: a numpy array making input K a constant."""
    b = ModelBuilder()
    quantized = dtype in ("int8", "int16")
    if quantized:
        quant = quant or (Q16 if dtype == "int16" else Q8)
    tensors, inputs = [], []
    for k, (shape, const) in enumerate(((shape1, const1), (shape2, const2))):
        q = dict(scale=quant[k][0], zero_point=quant[k][1]) if quantized else {}
        if const is None:
            t = b.activation(f"x{k}", shape, dtype, **q)
            inputs.append(t)
        else:
            t = b.constant(f"c{k}", np.asarray(const).reshape(shape), dtype=dtype, **q)
        tensors.append(t)
    if out_shape is None:
        out_shape = list(np.broadcast_shapes(tuple(shape1), tuple(shape2)))
    q = dict(scale=quant[2][0], zero_point=quant[2][1]) if quantized else {}
    y = b.activation("y", out_shape, dtype, **q)
    opts = add_options(activation, pot_scale_int16) if kind == "ADD" else mul_options(activation)
    b.op(kind, tensors, [y], opts)
    return b.finish(inputs, [y])


def const_data(dtype, shape, seed=1):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


# (dtype, shape1, shape2, activation, quant) -- run for both ADD and MUL.
CASES = [
    ("int8", [1, 4, 4, 8], [1, 4, 4, 8], "NONE", None),
    ("int8", [1, 4, 4, 8], [1, 1, 1, 8], "RELU", None),
    ("int8", [1, 4, 4, 8], [1], "RELU6", [(0.02, 10), (0.3, -7), (0.05, -20)]),
    ("int8", [1], [1, 4, 4, 8], "NONE", [(0.3, -7), (0.02, 10), (0.05, -20)]),
    ("int8", [2, 3, 1, 5], [1, 1, 4, 1], "RELU_N1_TO_1", [(0.01, 0), (0.02, 0), (0.008, 0)]),
    ("int8", [3, 1, 6], [2, 1, 1, 1], "NONE", None),  # ranks differ, both sides broadcast
    ("int8", [2, 1, 3, 1, 4], [1, 2, 1, 5, 1], "RELU", None),  # 5D
    ("int8", [1, 5, 7], [1, 5, 7], "NONE", [(0.5, -128), (0.5, 127), (1.0, -128)]),  # extreme zero points
    ("int8", [2, 9], [9], "RELU6", [(0.05, 127), (0.05, -128), (0.05, 127)]),
    ("int8", [4, 6], [4, 6], "NONE", [(0.001, 3), (0.9, -4), (0.03, 1)]),  # very different input scales
    ("int16", [1, 4, 4, 8], [1, 4, 4, 8], "NONE", None),
    ("int16", [1, 4, 4, 8], [1, 1, 1, 8], "RELU", None),
    ("int16", [2, 3, 5], [1], "RELU6", [(0.0005, 0), (0.0005, 0), (0.0005, 0)]),
    ("int16", [3, 1, 4], [1, 5, 1], "RELU_N1_TO_1", [(0.00004, 0), (0.00003, 0), (0.00005, 0)]),
    ("float32", [1, 4, 4, 8], [1, 4, 4, 8], "NONE", None),
    ("float32", [1, 4, 4, 8], [1, 1, 1, 8], "RELU6", None),
    ("float32", [1], [2, 3, 5], "RELU_N1_TO_1", None),
    ("float32", [2, 1, 3, 1, 4], [1, 2, 1, 5, 1], "RELU", None),
]


def _case_id(c):
    return f"{c[0]}-{'x'.join(map(str, c[1]))}-{'x'.join(map(str, c[2]))}-{c[3]}"


@pytest.mark.parametrize("kind", ["ADD", "MUL"])
@pytest.mark.parametrize("dtype,shape1,shape2,activation,quant", CASES, ids=[_case_id(c) for c in CASES])
def test_add_mul_matches_tflm(tmp_path, kind, dtype, shape1, shape2, activation, quant):
    assert_matches_oracle(binary_model(kind, dtype, shape1, shape2, activation, quant), tmp_path)


@pytest.mark.parametrize("kind", ["ADD", "MUL"])
@pytest.mark.parametrize(
    "dtype,shape1,shape2,const_side",
    [
        ("int8", [1, 4, 4, 8], [8], 2),
        ("int8", [1], [1, 3, 3, 4], 1),  # constant scalar first
        ("int16", [2, 6], [2, 6], 2),
        ("float32", [1, 4, 4, 8], [1, 1, 1, 8], 2),
    ],
)
def test_constant_operand(tmp_path, kind, dtype, shape1, shape2, const_side):
    const = const_data(dtype, shape1 if const_side == 1 else shape2)
    kwargs = {"const1": const} if const_side == 1 else {"const2": const}
    lib = assert_matches_oracle(binary_model(kind, dtype, shape1, shape2, "RELU", **kwargs), tmp_path)
    assert len(lib.info.inputs) == 1


@pytest.mark.parametrize("pot_scale_int16", [False, True])
def test_add_int16_pot_scale_option_takes_general_path(tmp_path, pot_scale_int16):
    # TFLM Micro ignores pot_scale_int16 and always rescales generally; so do we, even for
    # non-power-of-two scales.
    model = binary_model(
        "ADD",
        "int16",
        [2, 4, 8],
        [2, 4, 8],
        "NONE",
        pot_scale_int16=pot_scale_int16,
        quant=[(2**-12, 0), (0.0003, 0), (2**-11, 0)],
    )
    assert_matches_oracle(model, tmp_path)


@pytest.mark.parametrize("kind", ["ADD", "MUL"])
def test_sanitized(tmp_path, kind):
    assert_matches_oracle(binary_model(kind, "int8", [2, 3, 1, 5], [1, 1, 4, 1], "RELU"), tmp_path, sanitize=True)
    assert_matches_oracle(binary_model(kind, "int16", [1, 4, 4, 8], [8], "NONE"), tmp_path / "i16", sanitize=True)


def test_macs_one_per_output_element(tmp_path):
    lib = compile_bytes(binary_model("MUL", "int8", [1, 4, 4, 8], [8]), tmp_path)
    assert [o["macs"] for o in lib.metadata["operators"]] == [128]


# ---- in place: the output buffer is one of the inputs --------------------------------------------


def _run_in_place(library, tmp_path: Path, alias: int, inputs, sanitize: bool):
    """Call the operator function with output0 pointing at input `alias`; return the output."""
    lib_dir = tmp_path / "lib"
    library.write(lib_dir)
    fn = library.functions[0]
    meta_in = library.info.inputs
    ctype = fn.params[0][0].replace("const ", "").rstrip("*")
    sizes = [int(np.prod(m.shape)) for m in meta_in]
    decls = "\n".join(f"static {ctype} in{k}[{n}];" for k, n in enumerate(sizes))
    reads = "\n".join(f"  if (fread(in{k}, sizeof(in{k}), 1, stdin) != 1) return 1;" for k in range(len(sizes)))
    args = ", ".join([f"in{k}" for k in range(len(sizes))] + [f"in{alias}"])
    main = tmp_path / "main.c"
    main.write_text(f"""#include <stdio.h>
#include "{library.metadata["name"]}.h"
{decls}
int main(void) {{
{reads}
  {fn.name}({args});
  fwrite(in{alias}, sizeof(in{alias}), 1, stdout);
  return 0;
}}
""")
    exe = tmp_path / "inplace"
    flags = STRICT_CFLAGS + (SANITIZE_CFLAGS if sanitize else ["-O2"])
    subprocess.run(
        [
            *compiler(),
            *flags,
            f"-I{lib_dir / 'include'}",
            str(main),
            str(lib_dir / "src" / f"{library.metadata['name']}_ops.c"),
            "-o",
            str(exe),
        ],
        check=True,
    )
    blob = b"".join(np.ascontiguousarray(x).tobytes() for x in inputs)
    out = subprocess.run([str(exe)], input=blob, capture_output=True, check=True).stdout
    return np.frombuffer(out, dtype=inputs[alias].dtype)


@pytest.mark.parametrize("kind", ["ADD", "MUL"])
@pytest.mark.parametrize(
    "dtype,shape1,shape2,alias",
    [
        ("int8", [1, 4, 4, 8], [1, 4, 4, 8], 0),
        ("int8", [1, 4, 4, 8], [1, 4, 4, 8], 1),
        ("int8", [1, 4, 4, 8], [1, 1, 1, 8], 0),  # broadcast operand read repeatedly
        ("float32", [3, 1, 5], [3, 4, 5], 1),
    ],
)
def test_in_place(tmp_path, kind, dtype, shape1, shape2, alias):
    model = binary_model(kind, dtype, shape1, shape2, "RELU6")
    library = compile_bytes(model, tmp_path)
    inputs = random_inputs(library.info.inputs, seed=7)
    want = Oracle(model).run(inputs)[0].reshape(-1)
    got = _run_in_place(library, tmp_path, alias, inputs, sanitize=dtype == "int8" and alias == 0)
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


# ---- rejections ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,message",
    [
        (lambda: binary_model("ADD", "int8", [2, 3], [4, 3], out_shape=[4, 3]), "do not broadcast"),
        (lambda: binary_model("MUL", "int16", [4], [4], quant=[(0.001, 3), (0.001, 0), (0.001, 0)]), "zero point 0"),
        (lambda: binary_model("ADD", "int8", [4], [4], quant=[(1.0, 0), (1.0, 0), (1e-8, 0)]), "output rescale"),
        (lambda: binary_model("ADD", "int8", [1, 4], [4], out_shape=[4]), "broadcast shape"),
        (lambda: binary_model("MUL", "int8", [1, 1, 1, 1, 1, 1, 2], [2]), "up to 6D"),
        (lambda: binary_model("ADD", "int64", [4], [4]), "not supported"),
    ],
)
def test_rejects_unsupported(tmp_path, model, message):
    with pytest.raises(UnsupportedModelError, match=message) as info:
        compile_bytes(model(), tmp_path)
    assert "operator 0" in str(info.value)


# ---- int32 (unquantized) and float specials ------------------------------------------------------


@pytest.mark.parametrize("kind", ["ADD", "MUL"])
@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
def test_int32_matches_tflm(tmp_path, kind, activation):
    # Full-range random values: the sums and products wrap as TFLM's int32 arithmetic; TFLM's
    # int32 ADD ignores the fused activation, its MUL applies it.
    lib = assert_matches_oracle(
        binary_model(kind, "int32", [2, 3, 4], [3, 1], activation), tmp_path, n_inputs=3, sanitize=activation == "RELU"
    )
    assert lib.metadata["outputs"][0]["dtype"] == "int32"


@pytest.mark.parametrize("kind", ["ADD", "MUL"])
def test_float_nan_and_infinity_as_tflm(tmp_path, kind):
    # TFLM's std::min/std::max keep NaN and clamp infinities to +-FLT_MAX.
    x = np.array([np.nan, np.inf, -np.inf, 1.0, 3e38, np.inf], np.float32)
    y = np.array([1.0, 1.0, 2.0, np.nan, 3e38, -np.inf], np.float32)
    assert_matches_oracle(binary_model(kind, "float32", [6], [6]), tmp_path, inputs=[[x, y]])
