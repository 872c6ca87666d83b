"""Patch-based execution (passes/patches.py): a CNN's leading stage run as a grid of spatial patches
with the halos recomputed. Sweeps of small stages (CONV_2D, DEPTHWISE_CONV_2D, pointwise, residual
ADD; strides 1 and 2; SAME and VALID; odd sizes) under several grids are bit-exact with the TFLM
oracle on the host; the VWW look-alike and IC are bit-exact on mps2_an386 with a lower RAM peak."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import ROOT
from model_builder import ModelBuilder, add_options, conv2d_options, depthwise_options
from oracle import Oracle

from microcompiler.codegen import generate_library
from microcompiler.compiler import compile_model, run_passes
from microcompiler.errors import MicrocompilerError
from microcompiler.frontend.tflite import load_tflite
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.passes import PIPELINE, patch_stage
from microcompiler.passes.memory_plan import tail_pairs
from microcompiler.passes.patches import (
    AUTO_MAX_PEAK_RATIO,
    PATCH_COPY,
    apply_patches,
    choose_patches,
    stage_lengths,
    tail_shares,
)

sys.path.insert(0, str(ROOT / "scripts"))
import lookalikes  # noqa: E402


class _Stage:
    """A small int8 CNN built layer by layer, activations quantized so that they neither vanish nor saturate."""

    def __init__(self, shape, seed):
        self.b, self.rng = ModelBuilder(), np.random.default_rng(seed)
        self.x = self.b.activation("image", [1, *shape], "int8", scale=0.05, zero_point=3)
        self.n = 0

    def conv(self, x, kernel, stride, padding, out_c=None, kind="CONV_2D"):
        self.n += 1
        b, rng = self.b, self.rng
        _, h, w, c = b.tensors[x].shape
        depthwise = kind == "DEPTHWISE_CONV_2D"
        oc = c if depthwise else out_c
        taps = kernel * kernel * (1 if depthwise else c)
        w_scale = rng.uniform(0.5, 1.5, oc) * 150 / (math.sqrt(taps) * 74 * 74)
        wt = b.constant(
            f"layer{self.n}/w",
            rng.integers(-127, 128, (1, kernel, kernel, oc) if depthwise else (oc, kernel, kernel, c), dtype=np.int8),
            scale=w_scale,
            zero_point=[0] * oc,
            axis=3 if depthwise else 0,
        )
        bias = b.constant(
            f"layer{self.n}/b",
            rng.integers(-3000, 3000, oc).astype(np.int32),
            scale=list(0.05 * w_scale),
            zero_point=[0] * oc,
        )
        size = [(n + stride - 1) // stride if padding == "SAME" else (n - kernel) // stride + 1 for n in (h, w)]
        y = b.activation(f"layer{self.n}/out", [1, *size, oc], "int8", scale=0.05, zero_point=-20)
        options = (depthwise_options if depthwise else conv2d_options)(padding, (stride, stride), activation="RELU")
        b.op(kind, [x, wt, bias], [y], options)
        return y

    def add(self, a, c):
        self.n += 1
        y = self.b.activation(f"layer{self.n}/add", list(self.b.tensors[a].shape), "int8", scale=0.08, zero_point=-5)
        self.b.op("ADD", [a, c], [y], add_options())
        return y


def _plain(shape=(13, 11, 3), seed=0, stride=2, padding="SAME"):
    """conv 3x3 -> depthwise 3x3 -> pointwise -> depthwise 3x3 with ``stride`` (the stage output)."""
    s = _Stage(shape, seed)
    y = s.conv(s.x, 3, 1, padding, 8)
    y = s.conv(y, 3, 1, "SAME", kind="DEPTHWISE_CONV_2D")
    y = s.conv(y, 1, 1, "VALID", 12)
    y = s.conv(y, 3, stride, padding, kind="DEPTHWISE_CONV_2D")
    return s.b.finish([s.x], [y]), 4


def _strided_first(shape=(17, 15, 2), seed=1):
    """conv 3x3 stride 2 VALID -> depthwise 5x5 SAME -> conv 3x3 stride 2 SAME (odd sizes throughout)."""
    s = _Stage(shape, seed)
    y = s.conv(s.x, 3, 2, "VALID", 6)
    y = s.conv(y, 5, 1, "SAME", kind="DEPTHWISE_CONV_2D")
    y = s.conv(y, 3, 2, "SAME", 8)
    return s.b.finish([s.x], [y]), 3


def _residual(shape=(12, 10, 3), seed=2):
    """conv -> conv -> conv -> ADD(first conv, third conv): both ADD operands at the same patch window
    (IC's first block); then a stride-2 conv after the stage."""
    s = _Stage(shape, seed)
    y0 = s.conv(s.x, 3, 1, "SAME", 8)
    y1 = s.conv(y0, 3, 1, "SAME", 8)
    y2 = s.conv(y1, 3, 1, "SAME", 8)
    y = s.add(y0, y2)
    out = s.conv(y, 3, 2, "SAME", 8)
    return s.b.finish([s.x], [out]), 4


def _growing(shape=(15, 13, 3), seed=4, widths=(4, 12, 20)):
    """conv 3x3 -> 1x1 growing twice (``widths``) -> depthwise 3x3 stride 2: the 1x1 layers write over
    their input's tail (tail_shares) on DSP cores; odd sizes give every pixel tail (1-3 of 4)."""
    s = _Stage(shape, seed)
    y = s.conv(s.x, 3, 1, "SAME", widths[0])
    for c in widths[1:]:
        y = s.conv(y, 1, 1, "VALID", c)
    y = s.conv(y, 3, 2, "SAME", kind="DEPTHWISE_CONV_2D")
    return s.b.finish([s.x], [y]), 1 + len(widths)


STAGES = {
    "plain": _plain,
    "plain_valid_s1": lambda: _plain((9, 14, 4), 3, 1, "VALID"),
    "strided_first": _strided_first,
    "residual": _residual,
    "growing": _growing,
    "growing_8_16": lambda: _growing((14, 17, 1), 5, (8, 16)),
}


def _patched_library(model_bytes: bytes, tmp_path: Path, stage: int, grid, features=frozenset(), tails=False):
    """``tails``: with the growing 1x1 layers' tail shares the target's kernels allow (tail_shares)."""
    path = tmp_path / "model.tflite"
    path.write_bytes(model_bytes)
    graph = load_tflite(path)
    graph.name = "model"

    def patch(g):
        h = apply_patches(g, stage, grid)
        if tails:
            h.tail_shares = tail_shares(h, features)
        return h

    passes = [patch if p is patch_stage else p for p in PIPELINE]
    return generate_library(run_passes(graph, passes), features)


def _assert_bit_exact(model_bytes, library, tmp_path, sanitize=False, executor="aot"):
    inputs = [random_inputs(library.info.inputs, seed=s) for s in range(2)]
    ours = HostProgram(library, tmp_path / "build", sanitize=sanitize, executor=executor).run(inputs)
    oracle = Oracle(model_bytes)
    for k, input_set in enumerate(inputs):
        for got, want in zip(ours[k].outputs, oracle.run(input_set)):
            want = want.reshape(got.shape)
            assert np.std(want) > 1, "the sweep model's output is nearly constant: it would prove little"
            assert np.array_equal(got, want), f"input {k}: {np.count_nonzero(got != want)} of {got.size} differ"


@pytest.mark.parametrize(
    "name,grid,features,executor",
    [
        ("plain", (2, 2), frozenset(), "aot"),
        ("plain", (3, 2), frozenset({"dsp"}), "aot"),
        ("plain_valid_s1", (2, 3), frozenset({"dsp"}), "graph"),
        ("plain_valid_s1", (4, 1), frozenset(), "aot"),
        ("strided_first", (2, 2), frozenset({"dsp"}), "aot"),
        ("strided_first", (1, 3), frozenset(), "aot"),
        ("residual", (2, 2), frozenset({"dsp"}), "aot"),
        ("residual", (3, 3), frozenset(), "graph"),
    ],
)
def test_patched_stages_are_bit_exact_with_tflm(tmp_path, name, grid, features, executor):
    model_bytes, stage = STAGES[name]()
    library = _patched_library(model_bytes, tmp_path, stage, grid, features)
    ops = library.graph.operators
    patched = [op for op in ops if op.notes.patch is not None and "patch" not in op.options]
    assert len(patched) == stage * grid[0] * grid[1]
    assert {op.notes.patch.index for op in patched} == set(range(grid[0] * grid[1]))
    # every patch writes its part of the stage output: one MC_PATCH_COPY per patch into it
    stage_out = [op for op in ops if op.kind == PATCH_COPY and op.notes.layer_suffix.endswith("_out")]
    assert len(stage_out) == grid[0] * grid[1] and len({op.outputs[0] for op in stage_out}) == 1
    _assert_bit_exact(model_bytes, library, tmp_path, executor=executor)


@pytest.mark.parametrize(
    "name,grid,executor,sanitize",
    [
        ("growing", (2, 2), "aot", False),
        ("growing", (3, 2), "graph", False),
        ("growing", (2, 3), "aot", False),
        ("growing_8_16", (2, 2), "aot", False),
        ("growing_8_16", (1, 3), "graph", True),
    ],
)
def test_tail_shared_pointwise_layers_are_bit_exact_with_tflm(tmp_path, name, grid, executor, sanitize):
    """Each growing 1x1 layer's input lies in the last bytes of its output, which it overwrites as it
    goes (memory_plan.tail_pairs), and the outputs stay bit-exact (and inside the arena under ASan)."""
    model_bytes, stage = STAGES[name]()
    library = _patched_library(model_bytes, tmp_path, stage, grid, frozenset({"dsp"}), tails=True)
    g = library.graph
    assert len(g.tail_shares) == (stage - 2) * grid[0] * grid[1]
    placed = tail_pairs(g)  # a chain (4 -> 12 -> 20 channels) is placed one pair deep
    assert len(placed) == grid[0] * grid[1]
    for src, dst in placed.items():
        assert g.offsets[src] == g.offsets[dst] + g.tensors[dst].nbytes - g.tensors[src].nbytes
    plain = _patched_library(model_bytes, tmp_path, stage, grid, frozenset({"dsp"}))
    assert g.arena_bytes <= plain.graph.arena_bytes
    _assert_bit_exact(model_bytes, library, tmp_path, sanitize=sanitize, executor=executor)


def test_tail_pairs_keep_only_the_shares_that_still_hold(tmp_path):
    """memory_plan.tail_pairs: a share whose input another tensor aliases, or which a later operator
    still reads, is not placed in the tail (the planner's own aliases come after the patch pass)."""
    model_bytes, stage = _growing((9, 8, 3), 6, (8, 16))
    path = tmp_path / "m.tflite"
    path.write_bytes(model_bytes)
    g = apply_patches(run_passes(load_tflite(path), PIPELINE[:-2]), stage, (2, 2))
    g.tail_shares = tail_shares(g, frozenset({"dsp"}))
    assert len(g.tail_shares) == 4 and tail_pairs(g) == g.tail_shares
    (x, _), (x2, _), (x3, _) = list(g.tail_shares.items())[:3]
    g.aliases[x] = x2  # x in x2's buffer: neither is its own storage any more
    g.operators[-1].inputs.append(x3)  # x3 still read after the layer that would overwrite it
    pairs = tail_pairs(g)
    assert not {x, x2, x3} & set(pairs) and len(pairs) == 1


def test_tail_shares_only_where_the_kernel_gathers_its_pixels_first(tmp_path):
    """The portable kernels and Helium's run no tail shares; forced grids and M3 choices stay as before."""
    model_bytes, stage = _growing()
    for features in (frozenset(), frozenset({"dsp", "mve"})):
        library = _patched_library(model_bytes, tmp_path, stage, (2, 2), features, tails=True)
        assert library.graph.tail_shares == {}


def test_person_detect_lookalike_takes_the_grid_its_tail_shares_fit(tmp_path):
    """DSP cores: the 2x2 grid (fewer recomputed MACs than 3x2) with its growing 1x1 layers over their
    input's tail, in less arena than the 3x2 grid the portable kernels keep."""
    path = tmp_path / "person_detect.tflite"
    path.write_bytes(lookalikes.mobilenet_v1_025(1, seed=1))
    dsp = compile_model(path, features=frozenset({"dsp"}))
    portable = compile_model(path).metadata
    p, q = dsp.metadata["patches"], portable["patches"]
    assert p["grid"] == [2, 2] and sorted(q["grid"]) == [2, 3] and p["extra_macs"] < q["extra_macs"]
    assert dsp.graph.tail_shares and dsp.metadata["arena_bytes"] <= portable["arena_bytes"]
    # a knob that picks another kernel for those layers: the plan without tail shares (the 3x2 grid)
    tuned = compile_model(path, features=frozenset({"dsp"}), tuning={"CONV_2D": {"variant": "reference"}})
    assert tail_pairs(tuned.graph) == {} and tuned.metadata["patches"]["grid"] == [3, 2]
    assert tuned.metadata["arena_bytes"] == portable["arena_bytes"]


@needs_board_tools
def test_person_detect_lookalike_bit_exact_on_mps2_an386(tmp_path):
    """The tail-shared 2x2 grid: the class scores and the 256 pooled features."""
    run = assert_matches_oracle_on_board(lookalikes.mobilenet_v1_025(1, seed=1, pooled_output=True), tmp_path)
    assert len(np.unique(run.outputs[1])) > 2, "the pooled features are nearly constant: they would prove little"


def test_patch_buffers_stay_inside_their_bounds_under_asan(tmp_path):
    model_bytes, stage = _residual((11, 13, 3), 5)
    library = _patched_library(model_bytes, tmp_path, stage, (2, 2), frozenset({"dsp"}))
    _assert_bit_exact(model_bytes, library, tmp_path, sanitize=True)


def test_residual_operand_is_cut_to_the_patch_window(tmp_path):
    model_bytes, stage = _residual()
    library = _patched_library(model_bytes, tmp_path, stage, (2, 2))
    cuts = [op for op in library.graph.operators if op.kind == PATCH_COPY and op.notes.layer_suffix.endswith("_cut")]
    assert len(cuts) == 4  # the first conv's patch holds the second's halo too; ADD reads its own window
    for op in library.graph.operators:
        if op.kind == "ADD":
            a, c, y = (library.graph.tensors[i].shape for i in (*op.inputs, op.outputs[0]))
            assert a == c == y


def test_the_pass_is_chosen_only_when_it_lowers_the_peak(tmp_path):
    path = tmp_path / "plain.tflite"
    path.write_bytes(_plain((48, 48, 3))[0])
    plain = compile_model(path, patches="off").metadata
    auto = compile_model(path).metadata
    assert plain["patches"] == {} and plain["arena_bytes"] == plain["memory_peak"]["bytes"]
    assert auto["patches"]["count"] > 1 and auto["memory_peak"]["bytes"] < plain["memory_peak"]["bytes"]
    assert auto["patches"]["peak_before"] == plain["memory_peak"]["bytes"]
    assert auto["patches"]["extra_macs"] == auto["total_macs"] - plain["total_macs"] > 0
    forced = compile_model(path, tuning={"patches": "2x1", 0: {"variant": "reference"}}).metadata
    assert forced["patches"]["grid"] == [2, 1] and forced["patches"]["stage_layers"]
    # a knob for a layer's operator index applies to each of its patches
    first = [op["kernel"]["variant"] for op in forced["operators"] if op["layer_name"].startswith("layer1_patch")]
    assert first == ["reference", "reference"]
    with pytest.raises(MicrocompilerError, match="ROWSxCOLS"):
        compile_model(path, patches="2y2")


def test_a_patch_keeps_its_padding_in_a_note_not_in_the_options(tmp_path):
    """C comments and tuning signatures are built from the schema options: a patch's padding is a pass
    note (Operator.notes.patch_padding) and shows in neither."""
    from microcompiler.tuning.signature import operator_signature

    path = tmp_path / "plain.tflite"
    path.write_bytes(_plain((48, 48, 3))[0])
    library = compile_model(path, tuning={"patches": "2x1"})
    patched = [op for op in library.graph.operators if op.notes.patch_padding is not None]
    assert len(patched) >= 2 and {op.notes.patch_padding for op in patched} != {(0, 0)}
    assert all("patch_padding" not in op.options for op in patched)
    ops_c = next(text for rel, text in library.files.items() if rel.endswith("_ops.c"))
    assert "patch_padding" not in ops_c
    assert all("patch_padding" not in operator_signature(op, library.graph)["options"] for op in patched)


def test_shared_models_keep_their_layer_by_layer_plan_where_patches_do_not_help(shared_models):
    for model, arena in (("kws_ref_model.tflite", 16000), ("ad01_int8.tflite", 264)):
        graph = run_passes(load_tflite(shared_models / "mlperf_tiny" / model), PIPELINE[:-2])
        assert choose_patches(graph) is None
        meta = compile_model(shared_models / "mlperf_tiny" / model).metadata
        assert meta["patches"] == {} and meta["arena_bytes"] == arena
    # IC: a stage lowers its peak, but by a third only (not below AUTO_MAX_PEAK_RATIO): layer by layer
    ic = shared_models / "mlperf_tiny" / "pretrainedResnet_quant.tflite"
    choice = choose_patches(run_passes(load_tflite(ic), PIPELINE[:-2]))
    assert (
        choice["peak_after"] < choice["peak_before"]
        and choice["peak_after"] > AUTO_MAX_PEAK_RATIO * choice["peak_before"]
    )
    meta = compile_model(ic).metadata
    assert meta["patches"] == {} and meta["arena_bytes"] == 49152


def test_vww_lookalike_peak_is_at_most_0_6_of_the_layer_by_layer_bound(tmp_path):
    path = tmp_path / "vww.tflite"
    path.write_bytes(lookalikes.mobilenet_v1_025(3))
    meta = compile_model(path, features=frozenset({"dsp"})).metadata
    p = meta["patches"]
    assert p["peak_before"] == 55296 and p["grid"] == [2, 2] and len(p["stage_layers"]) == 8
    # arena + scratch: the RAM the model library asks for, well under 0.6 x 55,296 B with the stack
    assert meta["arena_bytes"] + meta["scratch_bytes"] <= 0.6 * 55296 - 1024
    assert p["extra_macs_percent"] < 10
    graph = run_passes(load_tflite(path), PIPELINE[:-2])
    assert 8 in stage_lengths(graph)


@needs_board_tools
def test_vww_lookalike_bit_exact_on_mps2_an386(tmp_path):
    """The class scores and the 256 pooled features (which every patch of the stage feeds)."""
    run = assert_matches_oracle_on_board(lookalikes.mobilenet_v1_025(3, pooled_output=True), tmp_path)
    assert len(np.unique(run.outputs[1])) > 2, "the pooled features are nearly constant: they would prove little"


@needs_board_tools
def test_ic_patched_bit_exact_on_mps2_an386_below_the_layer_by_layer_bound(tmp_path, shared_models):
    model = shared_models / "mlperf_tiny" / "pretrainedResnet_quant.tflite"
    meta = compile_model(model, features=frozenset({"dsp"}), patches="2x2").metadata
    assert meta["patches"]["stage_layers"] == ["conv2d", "conv2d_1", "conv2d_2", "add"]
    run = assert_matches_oracle_on_board(model.read_bytes(), tmp_path, patches="2x2")
    assert meta["arena_bytes"] + meta["scratch_bytes"] + run.stack_bytes < 49152


def test_layer_by_layer_validation_compares_the_stage_output_once_whole(tmp_path):
    """validate's first_divergence: the patch buffers have no TFLM counterpart; the stage output,
    written one patch at a time, is compared after its last patch, and matches."""
    from microcompiler.api import open_model
    from microcompiler.validation.layers import first_divergence
    from microcompiler.validation.reference import Reference

    model_bytes, stage = _residual()
    library = _patched_library(model_bytes, tmp_path, stage, (2, 2))
    inputs = random_inputs(library.info.inputs, 3)
    with open_model(library) as session, session.executor() as ex:
        result = first_divergence(
            ex, library, Reference(model_bytes, 1, preserve=True), inputs, load_tflite(tmp_path / "model.tflite")
        )
    assert result["diverged"] is False and result["checked_tensors"] == 2  # the ADD's output, the model's
    assert [t["tensor"] for t in result["skipped_tensors"]] == ["layer1/out", "layer2/out", "layer3/out"]
