"""ONNX Runtime's float kernels that are MLAS approximations or orders (docs/onnx.md, "Bit for bit with
ONNX Runtime"), reproduced in portable C (crt/include/microcompiler/kernel_ort.h) and held bit for bit
against ONNX Runtime on the host, over sweeps that include the extremes, infinities and NaN."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
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
    assert not differ.any(), (
        f"{what}: {int(differ.sum())} of {got.size} differ; first at {first}: {got[first]!r} vs {want[first]!r}"
    )


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


def test_global_average_pool_lanes_bit_for_bit(tmp_path):
    """GlobalAveragePool over channel counts that are not a multiple of 16 (ONNX Runtime's plain pool, not
    its NCHWc one): MLAS's plane sums in 4 lanes (MEAN ``ort_lanes``), bit for bit over several channel
    counts and plane sizes (with leftovers of 0 to 3 elements), after a Conv (NHWC) and on the input."""
    from onnx import numpy_helper

    rng = np.random.default_rng(7)
    nodes, outputs, inits, inputs = [], {}, [], {}
    feeds = {}
    for k, (c, h, w) in enumerate([(3, 5, 5), (5, 7, 9), (7, 12, 12), (20, 3, 17), (1, 1, 3), (2, 6, 2), (32, 4, 5)]):
        x, wc = f"x{k}", f"w{k}"
        inputs[x] = [1, c, h, w]
        feeds[x] = (rng.standard_normal((1, c, h, w)) * 10).astype(np.float32)
        inits.append(numpy_helper.from_array((rng.standard_normal((c, c, 1, 1)) * 0.5).astype(np.float32), wc))
        nodes += [
            helper.make_node("Conv", [x, wc], [f"h{k}"]),
            helper.make_node("GlobalAveragePool", [f"h{k}"], [f"y{k}"]),
        ]
        nodes.append(helper.make_node("GlobalAveragePool", [x], [f"z{k}"]))
        outputs.update({f"y{k}": [1, c, 1, 1], f"z{k}": [1, c, 1, 1]})
    path = tmp_path / "gap.onnx"
    onnx.save(model(nodes, inputs, outputs, inits), path)
    library = compile_model(path)
    lanes = [op for op in library.graph.operators if op.kind == "MEAN" and op.options.get("ort_lanes")]
    assert len(lanes) == 12  # every pool but the two over 32 channels (NCHWc: the sum in order)
    names = list(inputs)
    ours = HostProgram(library, tmp_path / "build").run([[feeds[n] for n in names]])[0].outputs
    theirs = session(path).run(None, feeds)
    for name, got, want in zip(outputs, ours, theirs):
        _same_bits(got, want, name)


def test_depthwise_not_nchwc_bit_for_bit(tmp_path):
    """Depthwise Convs over channel counts that are not a multiple of 4 (ONNX Runtime's plain Conv: im2col
    and MLAS's M=1 SGEMM kernel, taps in groups of 4): DEPTHWISE_CONV_2D ``mlas_m1``, bit for bit over
    channel counts, kernels of 4, 9 and 25 taps (and 6: a group of 2 left), strides, asymmetric padding,
    with and without a bias, with a Relu fused."""
    from onnx import numpy_helper

    rng = np.random.default_rng(11)
    cases = [(2, 3, 3, 1, True), (3, 3, 3, 2, False), (5, 5, 5, 1, True), (6, 2, 2, 2, True), (7, 2, 3, 1, False)]
    cases.append((9, 3, 3, 1, True))
    nodes, outputs, inits, inputs, feeds = [], {}, [], {}, {}
    for k, (c, kh, kw, stride, bias) in enumerate(cases):
        x, w, b = f"x{k}", f"w{k}", f"b{k}"
        inputs[x] = [1, c, 9, 11]
        feeds[x] = (rng.standard_normal((1, c, 9, 11)) * 4).astype(np.float32)
        inits.append(numpy_helper.from_array(rng.standard_normal((c, 1, kh, kw)).astype(np.float32), w))
        ins = [x, w]
        if bias:
            inits.append(numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), b))
            ins.append(b)
        conv = helper.make_node("Conv", ins, [f"d{k}"], group=c, pads=[1, 0, 1, 2], strides=[stride, stride])
        nodes += [conv, helper.make_node("Relu", [f"d{k}"], [f"y{k}"])]
        outputs[f"y{k}"] = [1, c, (9 + 2 - kh) // stride + 1, (11 + 2 - kw) // stride + 1]
    path = tmp_path / "depthwise.onnx"
    onnx.save(model(nodes, inputs, outputs, inits), path)
    library = compile_model(path)
    marked = [op for op in library.graph.operators if op.kind == "DEPTHWISE_CONV_2D" and op.options.get("mlas_m1")]
    assert len(marked) == len(cases)
    names = list(inputs)
    ours = HostProgram(library, tmp_path / "build").run([[feeds[n] for n in names]])[0].outputs
    theirs = session(path).run(None, feeds)
    for name, got, want in zip(outputs, ours, theirs):
        _same_bits(got, want, name)


@pytest.mark.long
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547", "mps2_an385"])
def test_mlas_orders_on_boards_equal_to_host(tmp_path, board):
    """The same C on the M4 and M55 (VFMA.F32) and the M3 (newlib's software fmaf): a depthwise Conv over 3
    channels (``mlas_m1``), Sigmoid and Tanh (``ort_mlas``), GlobalAveragePool (``ort_lanes``), AveragePool
    (``mlas_columns``) and ReduceMean (``ort_reduce`` KR, KRK and RKR) give the host's bits, which are ONNX
    Runtime's."""
    from onnx import numpy_helper

    from microcompiler.project import run_on_board

    rng = np.random.default_rng(13)
    inits = [numpy_helper.from_array(rng.standard_normal((3, 1, 3, 3)).astype(np.float32), "w")]
    inits.append(numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b"))
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["d"], group=3, pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["d"], ["s"]),
        helper.make_node("Tanh", ["d"], ["t"]),
        helper.make_node("GlobalAveragePool", ["s"], ["g"]),
        helper.make_node("AveragePool", ["t"], ["p"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("ReduceMean", ["d", "a1"], ["r1"]),
        helper.make_node("ReduceMean", ["d", "a2"], ["r2"]),
        helper.make_node("Reshape", ["d", "s3"], ["d3"]),
        helper.make_node("ReduceMean", ["d3", "a3"], ["r3"], keepdims=0),
    ]
    inits += [
        numpy_helper.from_array(np.array([3], np.int64), "a1"),
        numpy_helper.from_array(np.array([2], np.int64), "a2"),
        numpy_helper.from_array(np.array([3, 9, 11], np.int64), "s3"),
        numpy_helper.from_array(np.array([0, 2], np.int64), "a3"),
    ]
    path = tmp_path / "mlas.onnx"
    outputs = {"s": [1, 3, 9, 11], "t": [1, 3, 9, 11], "g": [1, 3, 1, 1], "p": [1, 3, 4, 5]}
    outputs.update({"r1": [1, 3, 9, 1], "r2": [1, 3, 1, 11], "r3": [9]})
    onnx.save(model(nodes, {"x": [1, 3, 9, 11]}, outputs, inits, opset=18), path)
    x = (rng.standard_normal((1, 3, 9, 11)) * 6).astype(np.float32)
    host = HostProgram(compile_model(path), tmp_path / "host").run([[x]])[0].outputs
    _, _, run = run_on_board(path, board, tmp_path / "project", input=[x], log=lambda _: None)
    for name, got, h, want in zip(outputs, run.outputs, host, session(path).run(None, {"x": x})):
        _same_bits(got, h, f"{name}: {board} vs the host")
        _same_bits(h, want, f"{name}: host vs ONNX Runtime")


def test_average_pool_not_nchwc_bit_for_bit(tmp_path):
    """AveragePool over channel counts that are not a multiple of 16 (ONNX Runtime's plain MlasPool): its
    vector kernel's order (columns over the rows first, ``mlas_columns``) for strides up to 2 across, its
    global kernel (4 lanes) for a window over the whole image, and its generic loop (the IR kernel's
    order) for wider strides; with TFLite's SAME padding (the count excludes it) and VALID."""
    rng = np.random.default_rng(17)
    cases = [
        ((2, 2), (2, 2), "VALID"),
        ((3, 3), (1, 1), "SAME_UPPER"),
        ((3, 2), (2, 1), "SAME_UPPER"),
        ((5, 5), (2, 2), "VALID"),
        ((2, 3), (1, 2), "SAME_UPPER"),
        ((9, 10), (1, 1), "VALID"),
        ((3, 3), (3, 3), "VALID"),
    ]
    nodes, outputs = [], {}
    for k, (kernel, strides, auto) in enumerate(cases):
        nodes.append(
            helper.make_node("AveragePool", ["x"], [f"y{k}"], kernel_shape=kernel, strides=strides, auto_pad=auto)
        )
        size = [
            (n + s - 1) // s if auto != "VALID" else (n - kk) // s + 1 for n, kk, s in zip((9, 10), kernel, strides)
        ]
        outputs[f"y{k}"] = [1, 5, *size]
    path = tmp_path / "pools.onnx"
    onnx.save(model(nodes, {"x": [1, 5, 9, 10]}, outputs), path)
    library = compile_model(path)
    orders = [op.options.get("mlas_columns", op.options.get("ort_lanes", 0)) for op in library.graph.operators]
    assert orders.count(1) == 5 and orders.count(4) == 1
    x = (rng.standard_normal((1, 5, 9, 10)) * 5).astype(np.float32)
    ours = HostProgram(library, tmp_path / "build").run([[x]])[0].outputs
    for name, got, want in zip(outputs, ours, session(path).run(None, {"x": x})):
        _same_bits(got, want, name)


def test_reduce_mean_bit_for_bit(tmp_path):
    """ReduceMean over trailing axes (Eigen's SSE reduction, split by each row's offset from an aligned
    boundary), over leading axes (in order) and over a middle axis (MLAS's M=1 GEMM, groups of 4), on
    NCHW values and on NHWC ones (after a Conv), keepdims or not, rows of 7 to 315 values at every offset: MEAN ``ort_reduce``, bit for bit."""
    from onnx import numpy_helper

    rng = np.random.default_rng(19)
    cases = [  # (input, shape, axes, keepdims)
        ("x", [1, 5, 7, 9], [2, 3], 1),
        ("x", [1, 5, 7, 9], [3], 0),
        ("x", [1, 5, 7, 9], [1], 1),
        ("x", [1, 5, 7, 9], [1, 2], 0),
        ("x", [1, 5, 7, 9], [0, 1, 2, 3], 0),
        ("h", [1, 6, 7, 9], [2, 3], 1),
        ("h", [1, 6, 7, 9], [2, 3], 0),
        ("h", [1, 6, 7, 9], [1], 1),
        ("s", [1, 35, 9], [2], 1),
        ("s", [1, 35, 9], [1], 0),
        ("x", [1, 5, 7, 9], [2], 1),
        ("h", [1, 6, 7, 9], [2], 0),
        ("s", [1, 35, 9], [0, 1], 1),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((6, 5, 1, 1)).astype(np.float32), "w")]
    inits.append(numpy_helper.from_array(np.array([1, 35, 9], np.int64), "rs"))
    nodes = [helper.make_node("Conv", ["x", "w"], ["h"]), helper.make_node("Reshape", ["x", "rs"], ["s"])]
    outputs = {}
    for k, (name, shape, axes, keep) in enumerate(cases):
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), f"a{k}"))
        nodes.append(helper.make_node("ReduceMean", [name, f"a{k}"], [f"y{k}"], keepdims=keep))
        outputs[f"y{k}"] = (
            [1 if j in axes else d for j, d in enumerate(shape)]
            if keep
            else [d for j, d in enumerate(shape) if j not in axes]
        )
    path = tmp_path / "reduce_mean.onnx"
    onnx.save(model(nodes, {"x": [1, 5, 7, 9]}, outputs, inits, opset=18), path)
    library = compile_model(path)
    marked = [op for op in library.graph.operators if op.kind == "MEAN" and op.options.get("ort_reduce")]
    assert len(marked) == len(cases)
    for scale in (1, 1e3):
        x = (rng.standard_normal((1, 5, 7, 9)) * scale).astype(np.float32)
        ours = HostProgram(library, tmp_path / "build").run([[x]])[0].outputs
        for name, got, want in zip(outputs, ours, session(path).run(None, {"x": x})):
            _same_bits(got, want, f"{name} at scale {scale}")


def test_reduce_mean_rkr_bit_for_bit(tmp_path):
    """ReduceMean over reduced, kept and reduced axes (a batch above 1: N with H and W, and others):
    per kept value the Eigen sums of its rows, each split by its own offset, added in order from 0, then
    divided (MEAN ``ort_reduce`` rkr), keepdims or not, bit for bit."""
    from onnx import numpy_helper

    rng = np.random.default_rng(29)
    cases = [  # (shape, axes, keepdims)
        ([2, 3, 5, 7], [0, 2, 3], 1),
        ([3, 4, 9, 11], [0, 2, 3], 0),
        ([2, 5, 17], [0, 2], 1),
        ([4, 2, 3, 33], [0, 1, 3], 0),
        ([2, 6, 1, 40], [0, 2, 3], 1),
        ([5, 3, 2], [0, 2], 0),
    ]
    nodes, inits, inputs, outputs = [], [], {}, {}
    for k, (shape, axes, keep) in enumerate(cases):
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), f"a{k}"))
        nodes.append(helper.make_node("ReduceMean", [f"x{k}", f"a{k}"], [f"y{k}"], keepdims=keep))
        inputs[f"x{k}"] = shape
        outputs[f"y{k}"] = (
            [1 if j in axes else d for j, d in enumerate(shape)]
            if keep
            else [d for j, d in enumerate(shape) if j not in axes]
        )
    path = tmp_path / "reduce_mean_rkr.onnx"
    onnx.save(model(nodes, inputs, outputs, inits, opset=18), path)
    library = compile_model(path)
    marked = [op for op in library.graph.operators if op.kind == "MEAN" and op.options.get("ort_reduce")]
    assert [op.options["ort_reduce"][0] for op in marked] == ["rkr"] * len(cases)
    for scale in (1, 1e3):
        xs = [(rng.standard_normal(shape) * scale).astype(np.float32) for shape, _, _ in cases]
        ours = HostProgram(library, tmp_path / "build").run([xs])[0].outputs
        theirs = session(path).run(None, dict(zip(inputs, xs)))
        for name, got, want in zip(outputs, ours, theirs):
            _same_bits(got, want, f"{name} at scale {scale}")
