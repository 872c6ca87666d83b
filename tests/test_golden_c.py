"""Expected-output tests of the generated C (in the style of nanopb's): the sources generated for small
models, as portable C and for the boards whose kernels users read (the Cortex-M4's DSP extension on
mps2_an386, the Cortex-M55's Helium on mps3_an547), are checked in under tests/golden/ and compared
byte for byte, so every change to what users read shows up as a diff in review.

After an intended change to code generation, regenerate them and commit them with the change:

    MC_UPDATE_GOLDEN=1 python -m pytest -q tests/test_golden_c.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import pytest
from harness import compile_bytes
from model_builder import (
    ModelBuilder,
    conv2d_options,
    fully_connected_options,
    mul_options,
    pool_options,
    reshape_options,
    softmax_options,
)

from microcompiler.boards import load_board

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("MC_UPDATE_GOLDEN") == "1"


def small_float_cnn() -> bytes:
    """A float32 CNN: CONV_2D 3x3 (RELU) -> MAX_POOL_2D 2x2 -> RESHAPE -> FULLY_CONNECTED."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    x = b.activation("input", [1, 6, 6, 2], "float32")
    w = b.constant("conv/weights", rng.normal(0, 0.5, (3, 3, 3, 2)).astype(np.float32))
    bias = b.constant("conv/bias", rng.normal(0, 0.1, 3).astype(np.float32))
    c = b.activation("model/conv/Relu;model/conv/BiasAdd", [1, 6, 6, 3], "float32")
    b.op("CONV_2D", [x, w, bias], [c], conv2d_options("SAME", activation="RELU"))
    p = b.activation("model/pool/MaxPool", [1, 3, 3, 3], "float32")
    b.op("MAX_POOL_2D", [c], [p], pool_options((2, 2), (2, 2)))
    flat = b.activation("model/flatten/Reshape", [1, 27], "float32")
    b.op("RESHAPE", [p, b.constant("shape", np.array([1, 27], np.int32))], [flat], reshape_options([1, 27]))
    fw = b.constant("dense/weights", rng.normal(0, 0.3, (4, 27)).astype(np.float32))
    fb_ = b.constant("dense/bias", rng.normal(0, 0.1, 4).astype(np.float32))
    y = b.activation("model/dense/BiasAdd", [1, 4], "float32")
    b.op("FULLY_CONNECTED", [flat, fw, fb_], [y], fully_connected_options())
    return b.finish([x], [y])


def table_functions_int8() -> bytes:
    """int8 SiLU (LOGISTIC, MUL) -> HARD_SWISH -> SOFTMAX over 16x16x4: the fuse_tables pass makes the
    first three one table lookup, the SOFTMAX (1,024 elements) takes its exponentials from a table."""
    b = ModelBuilder()
    x = b.activation("input", [1, 16, 16, 4], "int8", 0.05, -10)
    s = b.activation("model/swish/Sigmoid", [1, 16, 16, 4], "int8", 1 / 256, -128)
    b.op("LOGISTIC", [x], [s])
    m = b.activation("model/swish/mul", [1, 16, 16, 4], "int8", 0.03, -100)
    b.op("MUL", [x, s], [m], mul_options())
    h = b.activation("model/hard_swish/mul", [1, 16, 16, 4], "int8", 0.02, -110)
    b.op("HARD_SWISH", [m], [h])
    y = b.activation("model/softmax/Softmax", [1, 16, 16, 4], "int8", 1 / 256, -128)
    b.op("SOFTMAX", [h], [y], softmax_options(1.0))
    return b.finish([x], [y])


def tiny_cnn_int8() -> bytes:
    return (ROOT / "examples/tiny_cnn/tiny_cnn_int8.tflite").read_bytes()


# golden directory -> (model name, its bytes, the board whose kernels it is compiled for; None: portable C)
MODELS = {
    "tiny_cnn_int8": ("tiny_cnn_int8", tiny_cnn_int8, None),
    "small_float_cnn": ("small_float_cnn", small_float_cnn, None),
    "table_functions_int8": ("table_functions_int8", table_functions_int8, None),
    "tiny_cnn_int8_mps2_an386": ("tiny_cnn_int8", tiny_cnn_int8, "mps2_an386"),
    "tiny_cnn_int8_mps3_an547": ("tiny_cnn_int8", tiny_cnn_int8, "mps3_an547"),
    "small_float_cnn_mps3_an547": ("small_float_cnn", small_float_cnn, "mps3_an547"),
}


def generated_files(library) -> dict[str, str]:
    """The files the code generator writes for this model (not the runtime headers it copies)."""
    return {rel: text for rel, text in library.files.items() if not rel.startswith("include/microcompiler/")}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_generated_c_matches_golden(tmp_path, model):
    name, model_bytes, board = MODELS[model]
    features = load_board(board).cpu.features if board else frozenset()
    library = compile_bytes(model_bytes(), tmp_path, name=name, features=features)
    files = generated_files(library)
    golden_dir = GOLDEN / model
    if UPDATE:
        for rel, text in files.items():
            (golden_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden_dir / rel).write_text(text)
    expected = {str(p.relative_to(golden_dir)): p.read_text() for p in golden_dir.rglob("*") if p.is_file()}
    assert sorted(files) == sorted(expected), "the set of generated files changed"
    for rel, text in files.items():
        if text != expected[rel]:
            diff = "".join(
                difflib.unified_diff(
                    expected[rel].splitlines(True),
                    text.splitlines(True),
                    f"golden/{model}/{rel}",
                    f"generated/{rel}",
                    n=2,
                )
            )
            pytest.fail(
                f"generated {rel} differs from tests/golden/{model}/{rel} (if intended, regenerate "
                f"with MC_UPDATE_GOLDEN=1 and commit):\n{diff[:6000]}"
            )
