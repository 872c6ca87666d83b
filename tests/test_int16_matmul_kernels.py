"""The int16x8 versions of issue 21's fast kernels against the TFLM oracle, bit for bit: TRANSPOSE_CONV
"int16-phases" (ops/fast/transpose_conv_s16.py) and the LSTM gate matmuls "int16-rows4"
(ops/fast/lstm_gates.py), and BATCH_MATMUL "int16-cols4" (ops/fast/batch_matmul_s16.py; on Helium cores "mve-s16",
ops/fast/batch_matmul_mve.py).

Host sweeps (portable C, and the same with features={"dsp"}: the SMLAD emulation) over the branches
of the int8 "phases" sweep (every border, phases of several sizes, channels % 4, stride 1, batch 2,
per-tensor and per-channel weights) with int64, int16 and no bias, extreme inputs and weights,
every requantization form (wide, narrow, smmulr); ASan + UBSan over the borders; on QEMU the sweep
on the Cortex-M4 (DSP) and the Cortex-M55.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle, compile_bytes
from lstm_models import lstm_int16
from model_merge import assert_cases_match_oracle, merge_models
from oracle import Oracle
from test_fast_matmul_kernels import MATMUL_CASES, TRANSPOSE_CASES
from test_op_batch_matmul import batch_matmul_model
from test_op_transpose_conv import transpose_conv_model
from test_state import assert_steps_match, check_sequence, sequence

DSP = frozenset({"dsp"})


def _int16(case: dict) -> dict:
    out = {k: v for k, v in case.items() if k not in ("input_zp", "output_zp")}
    out["dtype"] = "int16"
    if out.get("bias", "default") == "default":
        out["bias"] = "int64"
    return out


TRANSPOSE_S16_CASES = {
    **{n: _int16(c) for n, c in TRANSPOSE_CASES.items()},
    "int16_bias_k3_s1": dict(dtype="int16", bias="int16", stride=(1, 1), hwc=(5, 3, 4), out_c=6),
    "large_scale_wide": dict(dtype="int16", hwc=(3, 3, 5), out_c=7, y_scale=1e-5),
}


def _models():
    return {n: transpose_conv_model(**c) for n, c in TRANSPOSE_S16_CASES.items()}


TC_S16 = {"TRANSPOSE_CONV": {"weights": "s16"}}  # the knob that keeps int16 pairs in flash (int16-phases)


@pytest.mark.parametrize(
    "features,weights", [(frozenset(), "s8"), (DSP, "s8"), (DSP, "s16")], ids=["c", "dsp", "dsp-s16"]
)
def test_transpose_conv_int16_phases_match_tflm(tmp_path, features, weights):
    """int16-phases-s8 (the default: int8 weights, each phase widened once into the scratch) and
    int16-phases (the "weights": "s16" knob)."""
    tuning = TC_S16 if weights == "s16" else None
    lib = assert_cases_match_oracle(_models(), tmp_path, n_inputs=3, features=features, tuning=tuning)
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert {(k["variant"], k["weights"]) for k in kernels} == {
        ("int16-phases", "s16") if weights == "s16" else ("int16-phases-s8", "s8")
    }
    assert {k["isa"] for k in kernels} == {"dsp" if features else "c"}
    c = lib.files["src/model_ops.c"]
    assert "mc_dot4_s16(row" in c  # the kernel's C, not the reference loops
    assert ("mc_widen_s8(wide" in c) == (weights == "s8")


def test_transpose_conv_int16_phases_extremes(tmp_path):
    """All-minimum and all-maximum inputs with the largest weights: the largest sums (still proven
    inside int32 for 4x4 taps x 16 channels x 127 x 2^15 ... per phase)."""
    model = transpose_conv_model(
        dtype="int16", hwc=(4, 4, 16), out_c=6, kernel=(4, 4), bias=None, weights=np.full((6, 4, 4, 16), -127, np.int8)
    )
    inputs = [[np.full((1, 4, 4, 16), v, np.int16)] for v in (-32768, 32767, 0)]
    lib = assert_matches_oracle(model, tmp_path, inputs=inputs, features=DSP)
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "int16-phases-s8"


def _weights_summing_to(total: int, shape, seed=1) -> np.ndarray:
    """int8 weights whose |values| sum to `total` per output channel (random signs)."""
    per_channel = int(np.prod(shape[1:]))
    row = np.zeros(per_channel, np.int64)
    full, rest = divmod(total, 127)
    row[:full], row[full] = 127, rest
    signs = np.random.default_rng(seed).choice([-1, 1], (shape[0], per_channel))
    return (signs * row).astype(np.int8).reshape(shape)


def test_transpose_conv_int16_phases_wide_requantization(tmp_path):
    """|weights| summing to 2^16 - 1 per channel (the int32 sums still exact) with a bias beyond what
    int32 leaves: the int64 bias and mc_requantize64 ("wide"), at the extreme inputs."""
    w = _weights_summing_to(2**16 - 1, (4, 3, 3, 58))
    model = transpose_conv_model(dtype="int16", hwc=(3, 3, 58), out_c=4, stride=(1, 1), weights=w)
    inputs = [[np.full((1, 3, 3, 58), v, np.int16)] for v in (-32768, 32767)]
    inputs.append(
        [np.where(w[0, 1, 1] < 0, -32768, 32767).astype(np.int16)[None, None, None].repeat(3, 1).repeat(3, 2)]
    )
    lib = assert_matches_oracle(model, tmp_path, inputs=inputs, features=DSP)
    kernel = lib.metadata["operators"][0]["kernel"]
    assert (kernel["variant"], kernel["requant"]) == ("int16-phases-s8", "wide")


def test_transpose_conv_int16_unprovable_sums_keep_the_reference(tmp_path):
    """A phase whose |weights| sum past 2^16 per channel: an int32 sum could overflow, so the reference
    loops (int64 sums) run, still bit-exact."""
    model = transpose_conv_model(
        dtype="int16",
        hwc=(3, 3, 64),
        out_c=2,
        kernel=(3, 3),
        stride=(1, 1),
        weights=np.full((2, 3, 3, 64), 127, np.int8),
    )
    lib = assert_matches_oracle(model, tmp_path, n_inputs=2, features=DSP)
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "reference"


def test_transpose_conv_int16_phases_sanitized(tmp_path):
    names = ("c8_k2_s2_valid_oc5", "c5_k4x3_s3x2_valid_nobias_oc6", "c2_k1x2_s3_oc1", "c7_k5_s2_odd_out_oc3")
    cases = {n: transpose_conv_model(**TRANSPOSE_S16_CASES[n]) for n in names}
    assert_cases_match_oracle(cases, tmp_path, n_inputs=2, sanitize=True, features=DSP)


# the kernel's C is the same SMLAD code on both: the M55 run is a long one
ON_BOARDS = ["mps2_an386", pytest.param("mps3_an547", marks=pytest.mark.long)]


@needs_board_tools
@pytest.mark.parametrize("board", ON_BOARDS)
def test_transpose_conv_int16_phases_on_boards(tmp_path, board):
    assert_matches_oracle_on_board(merge_models(list(_models().values())), tmp_path, board=board)


# ---- LSTM int16-rows4 ------------------------------------------------------------------------------

LSTM_S16_MODELS = {
    "single": lambda: lstm_int16(),
    "two-layer-batch2": lambda: lstm_int16(layers=2, batch=2, n_state=8, n_input=4),
    "tails": lambda: lstm_int16(n_input=13, n_state=5),
    "one-unit-one-input": lambda: lstm_int16(n_input=1, n_state=1),
}


LSTM_S16 = {"UNIDIRECTIONAL_SEQUENCE_LSTM": {"weights": "s16"}}  # the knob that keeps int16 pairs in flash


@pytest.mark.parametrize("features", [frozenset(), DSP], ids=["c", "dsp"])
@pytest.mark.parametrize("name", list(LSTM_S16_MODELS))
def test_lstm_int16_rows4_sequence(tmp_path, name, features):
    """Sequences (state across inferences, then reset) under ASan/UBSan, step by step against TFLM:
    depths % 4 (zero-padded rows) and exact quads, gates straddling blocks of 4 rows; the default
    int16-rows4-s8 (int8 weights in flash, widened in registers)."""
    library = check_sequence(LSTM_S16_MODELS[name](), tmp_path, executors=("aot",), sanitize=True, features=features)
    kernels = [op["kernel"] for op in library.metadata["operators"] if op["kind"] == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert kernels and all(k["variant"] == "int16-rows4-s8" and k["weights"] == "s8" for k in kernels)
    assert {k["isa"] for k in kernels} == {"dsp" if features else "c"}


def test_lstm_int16_rows4_s16_knob_sequence(tmp_path):
    """The "weights": "s16" knob keeps int16-rows4 (int16 pairs in flash): the tails model (depths
    % 4, gates straddling blocks of 4 rows) under ASan/UBSan against TFLM."""
    library = check_sequence(
        LSTM_S16_MODELS["tails"](), tmp_path, executors=("aot",), sanitize=True, features=DSP, tuning=LSTM_S16
    )
    (kernel,) = [op["kernel"] for op in library.metadata["operators"] if op["kind"] == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert (kernel["variant"], kernel["weights"]) == ("int16-rows4", "s16")


def test_lstm_and_transpose_conv_int16_offer_the_s16_knob_to_the_tuner(tmp_path):
    """`microcompiler tune` tries the int16 pairs against the default int8 weights (the LSTM's state
    tensors, variables without data, hash as names)."""
    from microcompiler.compiler import run_passes
    from microcompiler.frontend.tflite import parse_tflite
    from microcompiler.tuning.candidates import operator_candidates

    for model in (LSTM_S16_MODELS["tails"](), transpose_conv_model(dtype="int16")):
        graph = run_passes(parse_tflite(model))
        (op,) = graph.operators
        assert operator_candidates(op, graph, DSP) == [{}, {"weights": "s16"}, {"variant": "reference"}]


@needs_board_tools
@pytest.mark.parametrize("board", ON_BOARDS)
def test_lstm_int16_rows4_sequence_on_boards(tmp_path, board):
    """Every step's input run by the firmware on the emulated Cortex-M4 and M55 (SMLAD), against TFLM."""
    from microcompiler.boards import load_board
    from microcompiler.project import run_on_board

    model = LSTM_S16_MODELS["two-layer-batch2"]()
    library = compile_bytes(model, tmp_path, features=frozenset(load_board(board).cpu.features))
    assert {op["kernel"]["variant"] for op in library.metadata["operators"]} == {"int16-rows4-s8"}
    seq = sequence(library.info)
    _, _, run = run_on_board(library, board, tmp_path / "project", input_steps=seq, log=lambda _: None)
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), board)


# ---- BATCH_MATMUL int16 mve-s16 ------------------------------------------------------------------

MVE = frozenset({"dsp", "mve"})
MATMUL_S16_CASES = {
    **MATMUL_CASES,
    "k16_in_place_n5": ([2, 3, 16], [2, 16, 5], {}),
    "k20_adj_y_three_chunks": ([1, 4, 20], [1, 6, 20], dict(adj_y=True)),
}


def _matmul_s16():
    return {
        n: batch_matmul_model("int16", lhs, rhs, seed=len(n), **options)
        for n, (lhs, rhs, options) in MATMUL_S16_CASES.items()
    }


def test_batch_matmul_int16_mve_match_tflm(tmp_path):
    """Columns % 4, depths % 8 (rows read in place or gathered), adj_x / adj_y, packed once or per
    batch, broadcasts, constant rhs; on the host the portable C of kernel_mve_matmul.h."""
    lib = assert_cases_match_oracle(_matmul_s16(), tmp_path, n_inputs=3, features=MVE)
    assert {o["kernel"]["variant"] for o in lib.metadata["operators"]} == {"mve-s16"}


def test_batch_matmul_int16_mve_extremes(tmp_path):
    """The largest products (-32768 x -32768, 40 of them: past int32) summed in 64 bits."""
    model = batch_matmul_model("int16", [2, 3, 40], [2, 40, 7])
    inputs = [
        [np.full((2, 3, 40), a, np.int16), np.full((2, 40, 7), b, np.int16)]
        for a, b in ((-32768, -32768), (32767, -32768), (32767, 32767))
    ]
    lib = assert_matches_oracle(model, tmp_path, inputs=inputs, features=MVE)
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "mve-s16"


def test_batch_matmul_int16_mve_sanitized(tmp_path):
    names = ("n9_k7_adj_x", "n3_k3_bcast_mixed_adj_y", "const_per_batch_bcast_n8_k12", "k20_adj_y_three_chunks")
    models = _matmul_s16()
    assert_cases_match_oracle({n: models[n] for n in names}, tmp_path, n_inputs=2, sanitize=True, features=MVE)


@needs_board_tools
def test_batch_matmul_int16_mve_on_m55(tmp_path):
    assert_matches_oracle_on_board(merge_models(list(_matmul_s16().values())), tmp_path, board="mps3_an547")


@pytest.mark.parametrize("features", [frozenset(), DSP], ids=["c", "dsp"])
def test_batch_matmul_int16_cols4_match_tflm(tmp_path, features):
    """The same sweep on SMLALD (DSP) and its portable C: odd depths (zero-padded rows), columns % 4."""
    lib = assert_cases_match_oracle(_matmul_s16(), tmp_path, n_inputs=3, features=features)
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert {(k["variant"], k["isa"]) for k in kernels} == {("int16-cols4", "dsp" if features else "c")}


def test_batch_matmul_int16_cols4_extremes_sanitized(tmp_path):
    model = batch_matmul_model("int16", [2, 3, 41], [2, 41, 7])
    inputs = [
        [np.full((2, 3, 41), a, np.int16), np.full((2, 41, 7), b, np.int16)]
        for a, b in ((-32768, -32768), (32767, -32768), (32767, 32767))
    ]
    assert_matches_oracle(model, tmp_path / "e", inputs=inputs, features=DSP)
    names = ("n9_k7_adj_x", "n3_k3_bcast_mixed_adj_y", "n13_k1", "const_per_batch_bcast_n8_k12")
    models = _matmul_s16()
    assert_cases_match_oracle({n: models[n] for n in names}, tmp_path / "s", n_inputs=2, sanitize=True, features=DSP)


@needs_board_tools
def test_batch_matmul_int16_cols4_on_m4(tmp_path):
    assert_matches_oracle_on_board(merge_models(list(_matmul_s16().values())), tmp_path, board="mps2_an386")


# ---- int16x8 weights at the model file's size (issue 22 item 6) --------------------------------------


def _weight_arrays_bytes(c: str, names: tuple[str, ...]) -> int:
    """Bytes of the flash arrays named ``<prefix>_<name>`` for each of ``names`` in the generated C."""
    sizes = {"int8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "int64_t": 8}
    total = 0
    for name in names:
        found = re.findall(rf"static const (u?int\d+_t) \w+_{name}\[(\d+)\] = \{{", c)
        assert len(found) == 1, (name, found)
        total += sizes[found[0][0]] * int(found[0][1])
    return total


def _constant_bytes(model: bytes, kind: str, roles: tuple[int, ...]) -> int:
    """Bytes the .tflite stores for inputs ``roles`` of its one ``kind`` operator."""
    from microcompiler.frontend.tflite import parse_tflite

    graph = parse_tflite(model)
    (op,) = [o for o in graph.operators if o.kind == kind]
    return sum(graph.tensors[op.inputs[i]].data.nbytes for i in roles)


def _flash_weights(model: bytes, tmp_path, kind: str, tuning=None) -> tuple[int, str]:
    lib = compile_bytes(model, tmp_path, features=DSP, tuning=tuning)
    (op,) = [o for o in lib.metadata["operators"] if o["kind"] == kind]
    return op["weights_bytes"], lib.files["src/model_ops.c"]


def test_int16x8_weights_in_flash_at_the_model_file_size(tmp_path):
    """TRANSPOSE_CONV (int16-phases-s8) and UNIDIRECTIONAL_SEQUENCE_LSTM (int16-rows4-s8) store their
    weights in flash as the model file's int8 bytes (shapes whose rows need no padding to 4 taps);
    the "weights": "s16" knob twice as many. The rest of the layer's flash is the derived constants,
    counted here: TRANSPOSE_CONV's bias as int32 plus an int32 multiplier per channel (the file's
    int64 bias: 8 bytes per channel, the narrow requantization) and its phase tables; the LSTM's int64
    gate biases as in the file, the requantization per gate and side, the sigmoid table. BATCH_MATMUL
    has nothing to narrow: TFLM requires both operands of one type (int16 x int16), and a constant
    int16 rhs (even depth) is stored as the file's int16 bytes, as pairs."""
    # TRANSPOSE_CONV 3x3 stride 2 on 8 channels -> 16: phases of 4, 2, 2, 1 taps x 8 channels
    tc = transpose_conv_model(dtype="int16", hwc=(5, 5, 8), out_c=16)
    total, c = _flash_weights(tc, tmp_path / "tc", "TRANSPOSE_CONV")
    weights, bias = _constant_bytes(tc, "TRANSPOSE_CONV", (1,)), _constant_bytes(tc, "TRANSPOSE_CONV", (3,))
    assert _weight_arrays_bytes(c, ("weights",)) == weights == 16 * 9 * 8
    phase_tables = _weight_arrays_bytes(c, ("phase_offsets", "taps_h", "taps_w"))
    assert total == weights + bias + phase_tables
    total_s16, c16 = _flash_weights(tc, tmp_path / "tc16", "TRANSPOSE_CONV", TC_S16)
    assert _weight_arrays_bytes(c16, ("weights",)) == 2 * weights and total_s16 == total + weights
    # LSTM: 8 inputs, 12 units (the 4 gates stacked: 48 rows of 8 and 12 taps)
    lstm = lstm_int16(n_input=8, n_state=12)
    kind = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    total, c = _flash_weights(lstm, tmp_path / "lstm", kind)
    weights = _constant_bytes(lstm, kind, (1, 2, 3, 4, 5, 6, 7, 8))
    biases = _constant_bytes(lstm, kind, (12, 13, 14, 15))
    assert _weight_arrays_bytes(c, ("input_weights", "hidden_weights")) == weights == 4 * 12 * (8 + 12)
    derived = _weight_arrays_bytes(
        c, ("input_multiplier", "input_shift", "hidden_multiplier", "hidden_shift", "sigmoid_table")
    )
    assert total == weights + biases + derived
    total_s16, c16 = _flash_weights(lstm, tmp_path / "lstm16", kind, LSTM_S16)
    assert _weight_arrays_bytes(c16, ("input_weights", "hidden_weights")) == 2 * weights
    assert total_s16 == total + weights
    # BATCH_MATMUL int16 x constant int16 rhs
    bmm = batch_matmul_model("int16", [2, 3, 16], [16, 5], constant_rhs=True)
    total, c = _flash_weights(bmm, tmp_path / "bmm", "BATCH_MATMUL")
    assert _weight_arrays_bytes(c, ("rhs_packed",)) == _constant_bytes(bmm, "BATCH_MATMUL", (1,)) == 16 * 5 * 2
