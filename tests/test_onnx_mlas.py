"""ONNX Runtime's float kernels that are MLAS approximations or orders (docs/onnx.md, "Bit for bit with
ONNX Runtime"), reproduced in portable C (crt/include/microcompiler/kernel_ort.h) and held bit for bit
against ONNX Runtime on the host, over sweeps that include the extremes, infinities and NaN."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper
from onnx_models import model, session

from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram


def _sweep() -> np.ndarray:
    """Every order of magnitude of both signs, the approximations' clamp points and their neighbours,
    random values over the range where the functions bend, zeros, subnormals, infinities and NaN."""
    rng = np.random.default_rng(36)
    magnitudes = np.logspace(-40, 38, 3000).astype(np.float32)
    edges = np.array([5, 9, 18, 0.5, 1, 2], np.float32)
    near = np.concatenate([np.nextafter(edges, np.float32(0)), edges, np.nextafter(edges, np.float32(np.inf))])
    special = np.array([0.0, -0.0, 1e-45, -1e-45, np.inf, -np.inf, np.nan, 3.4028235e38, -3.4028235e38], np.float32)
    rand = np.concatenate([rng.standard_normal(6000) * s for s in (0.01, 1, 4, 12)]).astype(np.float32)
    x = np.concatenate([magnitudes, -magnitudes, near, -near, special, rand]).astype(np.float32)
    return x.reshape(1, -1)


def _same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = np.asarray(got, np.float32).reshape(-1), np.asarray(want, np.float32).reshape(-1)
    differ = (got.view(np.uint32) != want.view(np.uint32)) & ~(np.isnan(got) & np.isnan(want))
    first = int(np.flatnonzero(differ)[0]) if differ.any() else -1
    assert not differ.any(), f"{what}: {int(differ.sum())} of {got.size} differ; first at {first}: {got[first]!r} vs {want[first]!r}"


def test_sigmoid_and_tanh_bit_for_bit(tmp_path):
    """Sigmoid and Tanh are MLAS's rational approximations (its x86-64 FMA kernels), not the C library's
    exp/tanh: the importer marks LOGISTIC/TANH ``ort_mlas`` and the C computes exactly MLAS's steps."""
    x = _sweep()
    n = x.shape[1]
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Tanh", ["x"], ["t"])]
    path = tmp_path / "sigmoid_tanh.onnx"
    onnx.save(model(nodes, {"x": [1, n]}, {"s": [1, n], "t": [1, n]}), path)
    library = compile_model(path)
    kinds = {op.kind: op.options for op in library.graph.operators}
    assert kinds["LOGISTIC"].get("ort_mlas") and kinds["TANH"].get("ort_mlas")
    ours = HostProgram(library, tmp_path / "build").run([[x]])[0].outputs
    theirs = session(path).run(None, {"x": x})
    assert np.isnan(theirs[0]).sum() == 1 and np.isnan(theirs[1]).sum() == 1  # NaN carried through
    _same_bits(ours[0], theirs[0], "Sigmoid")
    _same_bits(ours[1], theirs[1], "Tanh")
