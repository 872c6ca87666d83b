"""State kept across inferences (docs/state.md): variable tensors imported as persistent state, the
state section of the memory plan, <model>_reset(), and SVDF sequences compared step by step with
the TFLM interpreter invoked the same number of times on the same inputs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from harness import compile_bytes
from model_builder import ModelBuilder, svdf_options
from oracle import Oracle
from svdf_models import float_svdf, single_svdf_int8, stacked_svdf_kws

from microcompiler.codegen import generate_library
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.frontend.tflite import parse_tflite
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.passes import PIPELINE

STEPS = 12
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-5  # float SVDF: same operation order as TFLM, rounding may differ


def sequence(meta: ModelInfo, steps: int = STEPS, seed: int = 100) -> list[list[np.ndarray]]:
    return [random_inputs(meta.inputs, seed=seed + s) for s in range(steps)]


def assert_steps_match(ours, want, what: str):
    assert len(ours) == len(want)
    for step, (got_set, want_set) in enumerate(zip(ours, want)):
        for k, (got, exp) in enumerate(zip(got_set, want_set)):
            exp = np.asarray(exp).reshape(got.shape)
            if got.dtype == np.float32:
                np.testing.assert_allclose(
                    got, exp, rtol=FLOAT_RTOL, atol=FLOAT_ATOL, err_msg=f"{what}: step {step}, output {k}"
                )
            else:
                assert np.array_equal(got, exp), f"{what}: step {step}, output {k}: {got.ravel()} vs TFLM {exp.ravel()}"


def check_sequence(
    model: bytes,
    tmp_path,
    executors=("aot", "graph"),
    sanitize=False,
    features=frozenset(),
    tuning=None,
    opt="-O2",
):
    """Run STEPS inputs, reset, and the same STEPS again, on each executor; compare every step with
    TFLM (same inputs, same number of invocations, its own state) and the replay with the first pass."""
    library = compile_bytes(model, tmp_path, features=features, tuning=tuning)
    seq = sequence(library.info)
    want = Oracle(model).run_sequence(seq)
    # the outputs must depend on the state: the same input at two steps gives different outputs
    repeated = Oracle(model).run_sequence([seq[0]] * 3)
    assert not all(np.array_equal(repeated[0][k], repeated[2][k]) for k in range(len(repeated[0])))
    for executor in executors:
        program = HostProgram(library, tmp_path / f"build_{executor}", sanitize=sanitize, executor=executor, opt=opt)
        runs = program.run(seq + seq, reset_every=STEPS)
        ours = [r.outputs for r in runs]
        assert_steps_match(ours[:STEPS], want, f"{executor} executor")
        assert_steps_match(ours[STEPS:], want, f"{executor} executor after {library.metadata['name']}_reset()")
    return library


def test_single_svdf_int8_sequence(tmp_path):
    check_sequence(single_svdf_int8(), tmp_path)


@pytest.mark.parametrize(
    "shape",
    [dict(batch=2), dict(n_filter=1, rank=1), dict(n_filter=6, rank=3, batch=3)],
    ids=["batch2", "one-filter", "rank3-batch3"],
)
def test_svdf_int8_shapes_sequence(tmp_path, shape):
    """Batches, a single filter and unit (no loops), rank 3: every loop shape of the kernel."""
    check_sequence(single_svdf_int8(**shape), tmp_path, executors=("aot",))


@pytest.mark.parametrize(
    "make_model",
    [
        stacked_svdf_kws,
        lambda: stacked_svdf_kws(state_dtype="int8"),
        lambda: single_svdf_int8(batch=2),
        lambda: single_svdf_int8(batch=2, state_dtype="int8", state_zp=-7, n_memory=6),
        lambda: single_svdf_int8(n_filter=1, rank=1, n_input=7),
        lambda: single_svdf_int8(n_input=3),
        lambda: single_svdf_int8(state_zp=11, n_filter=6, rank=3, n_memory=3),
        lambda: single_svdf_int8(state_dtype="int8", n_filter=5, rank=1, n_input=9, n_memory=2),
        lambda: single_svdf_int8(state_dtype="int8", state_zp=100, n_filter=12, rank=4, n_input=16, n_memory=7),
        lambda: single_svdf_int8(n_memory=16),
    ],
    ids=[
        "stacked",
        "stacked-int8-state",
        "batch2",
        "batch2-int8-state-zp",
        "one-filter-input-tail",
        "input-shorter-than-4",
        "int16-state-zp-rank3",
        "int8-state-memory2",
        "int8-state-rank4-zp",
        "time-sums-past-2^30",
    ],
)
def test_svdf_dsp_variant_sequence(tmp_path, make_model):
    """The DSP (rows4) variant, on kernel_simd.h's portable emulation of SXTB16/SMLAD, under
    ASan/UBSan: int16 and int8 state, state zero points (TFLM adds them after the clamp, wrapping
    around), filter counts that are and are not multiples of 4, input tails, short and odd
    memories, batches."""
    library = check_sequence(make_model(), tmp_path, executors=("aot",), sanitize=True, features={"dsp"})
    kernels = [op["kernel"] for op in library.metadata["operators"] if op["kind"] == "SVDF"]
    assert kernels and all(k["variant"] == "rows4" and k["isa"] == "dsp" for k in kernels)


@pytest.mark.parametrize(
    "make_model",
    [
        stacked_svdf_kws,  # 40 and 16 inputs (padded row, none), 32 and 16 filters
        lambda: single_svdf_int8(batch=2, state_dtype="int8", state_zp=-7, n_memory=6),
        lambda: single_svdf_int8(state_dtype="int8", n_filter=5, rank=1, n_input=9, n_memory=2),
    ],
    ids=["stacked", "batch2-int8-state-zp", "filters-tail"],
)
def test_svdf_helium_variant_sequence(tmp_path, make_model):
    """The Helium variant (mve-rows4) on kernel_mve_matmul.h's portable C, under ASan/UBSan: the
    padded input row, filter counts that are and are not multiples of 4, batches."""
    library = check_sequence(make_model(), tmp_path, executors=("aot",), sanitize=True, features={"dsp", "mve"})
    kernels = [op["kernel"] for op in library.metadata["operators"] if op["kind"] == "SVDF"]
    assert kernels and all(k["variant"] == "mve-rows4" and k["isa"] == "mve" for k in kernels)


def test_svdf_dsp_requantization_is_fast_only_where_proven(tmp_path):
    """The rows4 kernel requantizes with SMMLAR where the accumulators provably stay below 2^30,
    else with TFLM's double rounding (int16 state, 16 steps of memory: the time sums may pass it)."""
    requants = [
        op["kernel"]["requant"]
        for model in (single_svdf_int8(), single_svdf_int8(n_memory=16))
        for op in compile_bytes(model, tmp_path / str(len(model)), features={"dsp"}).metadata["operators"]
    ]
    assert requants == ["smmlar", "smmlar-feature"]


def test_svdf_without_dsp_runs_the_reference_loop(tmp_path):
    """No DSP extension (Cortex-M3, the host): the plain C reference loop, exact too."""
    library = check_sequence(single_svdf_int8(state_dtype="int8", state_zp=-3), tmp_path, executors=("aot",))
    assert [op["kernel"]["variant"] for op in library.metadata["operators"]] == ["reference"]


def test_float_svdf_batch_and_no_activation_sequence(tmp_path):
    check_sequence(float_svdf(activation="NONE", batch=2), tmp_path, executors=("graph",))


def test_single_svdf_int8_state_sequence(tmp_path):
    """TFLM's int8 variant: int8 time weights and int8 activation state."""
    check_sequence(single_svdf_int8(state_dtype="int8"), tmp_path, executors=("aot",))


def test_stacked_svdf_kws_sequence_sanitized(tmp_path):
    """Three SVDF layers + FULLY_CONNECTED + SOFTMAX, under ASan/UBSan."""
    library = check_sequence(stacked_svdf_kws(), tmp_path, sanitize=True)
    assert library.metadata["state_bytes"] == 2 * (256 + 96 + 64)


def test_float_svdf_sequence(tmp_path):
    check_sequence(float_svdf(), tmp_path)


def test_variable_tensor_imported_as_state():
    graph = parse_tflite(single_svdf_int8())
    (state,) = graph.state_tensors
    t = graph.tensors[state]
    assert t.persistent and not t.is_constant and t.dtype == "int16"
    assert t.initial.shape == t.shape and not t.initial.any()


def _variable_model(dtype: str, zero_point: int, data=None) -> bytes:
    b = ModelBuilder()
    x = b.activation("x", [1, 2], dtype, scale=0.5 if dtype != "float32" else None, zero_point=zero_point)
    wf = b.constant(
        "wf",
        np.ones((2, 2), np.float32 if dtype == "float32" else np.int8),
        scale=None if dtype == "float32" else 0.5,
        zero_point=0,
    )
    wt = b.constant(
        "wt",
        np.ones((2, 3), np.float32 if dtype == "float32" else np.int8),
        scale=None if dtype == "float32" else 0.5,
        zero_point=0,
    )
    bias = b.constant(
        "bias",
        np.zeros(2, np.float32 if dtype == "float32" else np.int32),
        scale=None if dtype == "float32" else 0.25,
        zero_point=0,
    )
    st = b.variable("state", [1, 6], dtype, scale=None if dtype == "float32" else 0.5, zero_point=zero_point, data=data)
    y = b.activation("y", [1, 2], dtype, scale=None if dtype == "float32" else 0.5, zero_point=0)
    b.op("SVDF", [x, wf, wt, bias, st], [y], svdf_options(1))
    return b.finish([x], [y])


def test_int8_state_starts_at_its_zero_point():
    graph = parse_tflite(_variable_model("int8", -3))
    assert np.all(graph.tensors[graph.state_tensors[0]].initial == -3)


def test_variable_buffer_is_ignored_like_tflm(tmp_path):
    """TFLM starts every variable from zero even when the file gives it a buffer; so do we."""
    model = _variable_model("float32", 0, data=np.arange(6, dtype=np.float32) * 100)
    assert not parse_tflite(model).tensors[parse_tflite(model).state_tensors[0]].initial.any()
    check_sequence(model, tmp_path, executors=("aot",))


def test_state_is_a_section_of_its_own(tmp_path):
    library = compile_bytes(stacked_svdf_kws(), tmp_path)
    graph = library.graph
    states = graph.state_tensors
    assert len(states) == 3
    assert not set(states) & set(graph.offsets), "state must not be placed in the arena"
    spans = sorted((graph.state_offsets[i], graph.state_offsets[i] + graph.tensors[i].nbytes) for i in states)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), "state tensors overlap"
    assert graph.state_bytes == spans[-1][1]
    meta = json.loads(json.dumps(library.metadata))
    assert meta["state_bytes"] == graph.state_bytes
    assert [s["c_name"] for s in meta["state"]] == ["model_svdf_1_state", "model_svdf_2_state", "model_svdf_3_state"]
    header = library.files["include/model.h"]
    assert f"#define MODEL_STATE_BYTES {graph.state_bytes}" in header and "void model_reset(void);" in header
    ops = library.files["src/model_ops.c"]
    assert "static int16_t model_svdf_1_state[256];" in ops
    assert "memset(model_svdf_1_state, 0, sizeof(model_svdf_1_state));" in ops


def test_reset_restores_non_zero_initial_values(tmp_path):
    """State whose initial values are not all one byte is restored from a flash copy."""
    graph = parse_tflite(float_svdf())
    state = graph.state_tensors[0]
    graph.tensors[state].initial = np.linspace(-1, 1, graph.tensors[state].size, dtype=np.float32).reshape(
        graph.tensors[state].shape
    )
    for p in PIPELINE:
        graph = p(graph)
    library = generate_library(graph)
    assert "model_svdf_state_initial" in library.files[f"src/{graph.name}_ops.c"]
    seq = sequence(library.info, steps=3)
    runs = HostProgram(library, tmp_path / "build").run(seq + seq, reset_every=3)
    zero_start = HostProgram(generate_library(_zero_initial(graph)), tmp_path / "zero").run(seq[:1])
    for a, b in zip(runs[:3], runs[3:]):
        assert np.array_equal(a.outputs[0], b.outputs[0])
    assert not np.allclose(runs[0].outputs[0], zero_start[0].outputs[0])


def _zero_initial(graph):
    g = graph.copy()
    for i in g.state_tensors:
        g.tensors[i].initial = np.zeros_like(g.tensors[i].initial)
    return g


def test_state_tensor_as_model_output_is_refused():
    b = ModelBuilder()
    x = b.activation("x", [1, 2], "float32")
    st = b.variable("state", [1, 2], "float32")
    b.op("ADD", [x, x], [st])
    from microcompiler.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match="variable tensor"):
        parse_tflite(b.finish([x], [st]))


def test_analyze_counts_state_in_ram(tmp_path):
    from microcompiler.analysis.analyze import analyze_library
    from microcompiler.boards import load_board

    library = compile_bytes(stacked_svdf_kws(), tmp_path)
    result = analyze_library(library, load_board("mps2_an386"))
    assert result["totals"]["state_bytes"] == library.graph.state_bytes > 0
    stateless = dataclasses.replace(library.info, state_bytes=0)
    from microcompiler.project import DEFAULT_STACK_BYTES, estimate_footprint

    assert (
        estimate_footprint(library.info, "aot", DEFAULT_STACK_BYTES)["ram"]
        - estimate_footprint(stateless, "aot", DEFAULT_STACK_BYTES)["ram"]
    ) == library.graph.state_bytes
    plan = result["memory_plan"]
    assert plan["state_bytes"] == library.graph.state_bytes and len(plan["state"]) == 3
    assert not {s["tensor"] for s in plan["state"]} & {b["tensor"] for b in plan["buffers"]}
