"""`microcompiler analyze`: per-layer table, totals, fit and memory plan, no build; and its estimates
against measured `bench` runs on the five emulated cores (saved, and live in the long tests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from board_oracle import needs_board_tools
from harness import cli

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import fit_cost_model  # noqa: E402
import lookalikes  # noqa: E402

MODELS = ["mlperf_tiny/kws_ref_model", "mlperf_tiny/pretrainedResnet_quant", "mlperf_tiny/ad01_int8"]
# Layers under this share of the model's instructions are too short for a per-layer claim: the
# device timer ticks every 40 instructions and SOFTMAX's cost depends on the input values.
SMALL_LAYER_SHARE = 0.01


@pytest.mark.parametrize("model", MODELS)
def test_analyze_agrees_with_compile(tmp_path, shared_models, model):
    path = shared_models / f"{model}.tflite"
    proc = cli("analyze", path, "--board", "mps2_an386", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert cli("compile", path, "--board", "mps2_an386", "-o", tmp_path / "lib").returncode == 0
    meta = json.loads((tmp_path / "lib/metadata.json").read_text())
    assert result["totals"]["arena_bytes"] == meta["arena_bytes"]
    assert result["totals"]["weights_bytes"] == meta["params_bytes"]
    assert sum(layer["weights_bytes"] for layer in result["layers"]) == meta["params_bytes"]
    assert [layer["kind"] for layer in result["layers"]] == [op["kind"] for op in meta["operators"]]
    assert [layer["kernel"] for layer in result["layers"]] == [op["kernel"] for op in meta["operators"]]
    plan = result["memory_plan"]
    assert plan["arena_bytes"] == meta["arena_bytes"] and plan["lower_bound_bytes"] <= plan["arena_bytes"]
    for b in plan["buffers"]:  # every tensor inside the arena, and no two live ones overlap
        assert 0 <= b["offset"] and b["offset"] + b["bytes"] <= plan["arena_bytes"]
    for i, a in enumerate(plan["buffers"]):
        for b in plan["buffers"][i + 1 :]:
            if a["first_step"] <= b["last_step"] and b["first_step"] <= a["last_step"]:
                assert a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"], (a, b)
    assert result["fit"]["flash"]["fits"] and result["fit"]["ram"]["fits"]
    assert result["fit"]["ram"]["margin"] == result["fit"]["ram"]["available"] - result["fit"]["ram"]["needed"]


def test_analyze_table_and_a_board_that_is_too_small(tmp_path, shared_models):
    path = shared_models / "mlperf_tiny/pretrainedResnet_quant.tflite"
    proc = cli("analyze", path, "--board", "mps2_an386")
    assert proc.returncode == 0 and "conv2d_1" in proc.stdout and "lower bound" in proc.stdout
    assert "RAM peak: 49,152 B live at operator" in proc.stdout  # layer by layer: patches would cut it by a third only
    small = tmp_path / "tiny_board.toml"
    text = (ROOT / "boards/mps2_an386.toml").read_text()
    ram = 'name = "RAM"                # ZBT SSRAM2/3\nkind = "ram"\norigin = 0x20000000\nsize = 0x00400000'
    assert ram in text
    small.write_text(text.replace(ram, ram.replace("0x00400000", "0x00008000")))
    proc = cli("analyze", path, "--board", small, "--json")
    assert proc.returncode == 0, proc.stderr
    fit = json.loads(proc.stdout)["fit"]["ram"]
    assert fit["available"] == 32768 and not fit["fits"] and fit["margin"] < 0


# Issue 34 item 4: analyze within 10% of the measured instructions on every model of
# docs/benchmarks.md's tables, on every core. scripts/fit_cost_model.py saved what bench measured
# (tests/data/cost_model_measurements.json), so the default suite checks analyze as it is now against
# those counts without QEMU (every model of the tables, the unrolled LSTM and GRU too); the models the
# tables do not hold wait for the long test, and live bench runs check that the counts still hold.
MEASURED = json.loads((ROOT / "tests/data/cost_model_measurements.json").read_text())
BOARDS = fit_cost_model.BOARDS
_compiled: dict = {}  # (model, features) -> library, shared by the boards of one feature set


@pytest.fixture(scope="module")
def measured_models(tmp_path_factory):
    return {p.name: p for p in fit_cost_model.models(tmp_path_factory.mktemp("models"))}


@pytest.fixture(scope="module")
def table_models(tmp_path_factory):
    """docs/benchmarks.md's models (scripts/benchmarks.py's ALL_MODELS) by file name."""
    return {p.name: p for p in fit_cost_model.table_models(tmp_path_factory.mktemp("table"))}


def _estimates_against_the_measurements(board, paths, only):
    rows = fit_cost_model.estimate_rows(
        {k: m for k, m in MEASURED.items() if m["board"] == board}, paths, _compiled, only=only
    )
    assert rows, f"no saved measurement on {board}: run python scripts/fit_cost_model.py --boards {board}"
    off = [r for r in rows if not fit_cost_model.within(r, 0.10)]  # 10%, or 2 timer ticks on tiny models
    assert not off, off
    return rows


@pytest.mark.parametrize("board", BOARDS)
def test_estimates_within_10_percent_of_the_saved_measurements(board, table_models):
    rows = _estimates_against_the_measurements(board, table_models, None)
    assert len(rows) == len(table_models)


@pytest.mark.long
@pytest.mark.parametrize("board", BOARDS)
def test_every_measured_model_within_10_percent(board, measured_models):
    rows = _estimates_against_the_measurements(board, measured_models, None)
    assert len(rows) >= sum(fit_cost_model.measured_on(name, board) for name in measured_models) - 1


# Issue 36: the committed ONNX models (their QUANTIZE with round-half-even, ONNX Runtime's requantization
# epilogues and post tables, MLAS-order float kernels) on the boards the fit measures them on.
@pytest.mark.parametrize("board", fit_cost_model.ONNX_BOARDS)
def test_onnx_estimates_within_10_percent_of_the_saved_measurements(board):
    paths = {p.name: p for p in fit_cost_model.ONNX_MODELS}
    rows = _estimates_against_the_measurements(board, paths, None)
    assert len(rows) == sum(fit_cost_model.measured_on(name, board) for name in paths)


# Live bench runs: KWS on the M4 in the default suite, more models and cores with the long tests.
ESTIMATE_CASES = [("mlperf_tiny/kws_ref_model", "mps2_an386")] + [
    pytest.param(model, board, marks=pytest.mark.long)
    for board in BOARDS
    for model in (*MODELS, "micro_speech", "lstm_unrolled_int8", "mobilenet_v3_small_int8")
    if (model, board) != ("mlperf_tiny/kws_ref_model", "mps2_an386")
]


@needs_board_tools
@pytest.mark.parametrize("model,board", ESTIMATE_CASES)
def test_estimates_are_close_to_the_measured_instructions(tmp_path, shared_models, model, board):
    if model == "micro_speech":
        path = lookalikes.write("micro_speech", tmp_path)
    elif "/" in model:
        path = shared_models / f"{model}.tflite"
    else:
        path = KERAS / f"{model}.tflite"
    est = json.loads(cli("analyze", path, "--board", board, "--json").stdout)
    proc = cli("bench", path, "--board", board, "--json", "--number", "1", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr
    bench = json.loads(proc.stdout)
    per_tick = 1e9 / bench["timer_hz"]  # QEMU -icount shift=0: one instruction per nanosecond
    measured_total = bench["inference"]["ticks"] * per_tick
    estimated_total = est["totals"]["estimated_instructions"]
    assert abs(estimated_total - measured_total) <= 0.10 * measured_total, (estimated_total, measured_total)
    layers = {layer["index"]: layer for layer in est["layers"]}
    for op in bench["operators"]:
        measured = op["ticks"] * per_tick
        if measured < SMALL_LAYER_SHARE * measured_total:
            continue
        estimated = layers[op["index"]]["estimated_instructions"]
        assert abs(estimated - measured) <= 0.30 * measured, (op["index"], op["kind"], estimated, measured)


def test_bad_board_and_unwritable_report_are_one_line_errors(tmp_path, shared_models):
    path = shared_models / "tflm/hello_world_int8.tflite"
    proc = cli("analyze", path, "--board", "nope")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    proc = cli("analyze", path, "--html", tmp_path / "missing-dir" / "r.html")
    assert proc.returncode == 2 and "cannot write the report" in proc.stderr and "Traceback" not in proc.stderr


KERAS = ROOT / "tests" / "models" / "keras"


def test_while_loops_count_their_body_times_the_trip_count():
    """A WHILE is costed as its trip count times its condition and body (analysis/loops.py): the Keras
    GRU's loop runs its 20 steps (a counter from 0 stepped by 1 against the constant 20), a loop whose
    count is a model input is costed once, and the key says which."""
    from flow_models import while_int8
    from harness import compile_bytes

    from microcompiler.analysis.analyze import analyze_library, analyze_model

    gru = {layer["kind"]: layer for layer in analyze_model(KERAS / "gru_float32.tflite")["layers"]}["WHILE"]
    assert gru["cost_model"] == "WHILE|20 trips (counted)"
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        layers = analyze_library(compile_bytes(while_int8(), tmp))["layers"]
    loop = next(layer for layer in layers if layer["kind"] == "WHILE")
    assert loop["cost_model"] == "WHILE|1 trips (not knowable at compile time: assumed)"
    # the body (one int8 ADD of 6 elements and the counter's ADD) is in it, not a flat fallback
    assert loop["estimated_instructions"] > 100


@needs_board_tools
@pytest.mark.parametrize(
    "board,model",
    # long: test_estimates_within_10_percent_of_the_saved_measurements holds analyze within 10% of
    # fit_cost_model.py's measurements of them (the float GRU and LSTM: the long one)
    [
        pytest.param("mps2_an386", m, marks=pytest.mark.long)
        for m in ("conv_autoencoder_int8", "unet_int8", "transformer_block_int8", "lstm_int8")
    ]
    + [pytest.param("mps2_an386", m, marks=pytest.mark.long) for m in ("gru_float32", "lstm_float32")]
    + [
        pytest.param("mps3_an547", m, marks=pytest.mark.long)
        for m in ("conv_autoencoder_int8", "unet_int8", "transformer_block_int8", "lstm_int8")
    ]
    + [
        pytest.param(b, m, marks=pytest.mark.long)
        for b in ("mps2_an386", "mps3_an547")
        for m in ("conv_autoencoder_int16x8", "svdf_kws_int8")
    ],
)
def test_keras_lookalike_estimates_within_10_percent(board, model):
    """Issues 21 and 34: analyze within 10% of bench on the look-alikes with the new kernels (and the float GRU,
    whose time is all in its WHILE loop; the int16x8 autoencoder's piecewise-table LOGISTIC; the SVDF
    keyword-spotting example, SVDF rows4)."""
    path = KERAS / f"{model}.tflite"
    if model == "svdf_kws_int8":
        path = ROOT / "examples/svdf_kws/svdf_kws_int8.tflite"
    est = json.loads(cli("analyze", path, "--board", board, "--json").stdout)
    proc = cli("bench", path, "--board", board, "--json", "--number", "1", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr
    bench = json.loads(proc.stdout)
    measured = bench["inference"]["ticks"] * 1e9 / bench["timer_hz"]
    estimated = est["totals"]["estimated_instructions"]
    assert abs(estimated - measured) <= 0.10 * measured, (estimated, measured)
