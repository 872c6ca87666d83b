"""The RAM budget (passes/ram_budget.py, docs/memory.md): under ``--ram-limit`` the fastest plan whose
arena + scratch fits is chosen among layer by layer, in-place depthwise layers and patch stages of any
length and grid; none fits: one line naming the smallest plan's peak. Checked on a MobileNetV1 0.25
96x96 built with Keras and converted by the real TFLite converter (tests/models/keras/README.md):
bit-exact with TFLite Micro on the host and on mps2_an386 at or below 0.6x of its layer-by-layer
bound."""

from __future__ import annotations

import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import ROOT, assert_matches_oracle, cli

from microcompiler.compiler import compile_model, run_passes
from microcompiler.errors import BoardError
from microcompiler.frontend.tflite import load_tflite
from microcompiler.passes import budget_pipeline, patch_stage, plan_memory
from microcompiler.passes.ram_budget import NoPlanFits, candidate_plans, choose_plan, plan_for_budget

MOBILENET = ROOT / "tests" / "models" / "keras" / "mobilenet_v1_025_96_int8.tflite"
DSP = frozenset({"dsp"})


@pytest.fixture(scope="module")
def prepared():
    """The MobileNet after the passes that come before the planner."""
    return run_passes(load_tflite(MOBILENET), budget_pipeline(lambda g: g))


@pytest.fixture(scope="module")
def plans(prepared):
    return candidate_plans(prepared, DSP)


@pytest.fixture(scope="module")
def bound():
    """The layer-by-layer bound: arena + scratch with patches off."""
    meta = compile_model(MOBILENET, features=DSP, patches="off").metadata
    return meta["arena_bytes"] + meta["scratch_bytes"]


def test_the_plans_span_time_against_ram(plans, bound):
    names = [p.name for p in plans]
    assert names[0].startswith("default") and "layer by layer" in names
    layer_by_layer = plans[names.index("layer by layer")]
    assert layer_by_layer.ram_bytes == bound and layer_by_layer.extra_macs == 0
    patched = [p for p in plans if p.settings["grid"] != [1, 1]]
    assert any(p.settings["stage"] > 4 for p in patched), "a stage past the first downsampling blocks"
    assert any(p.settings["in_place_depthwise"] for p in patched), "in-place depthwise inside or after a stage"
    smallest = min(plans, key=lambda p: p.ram_bytes)
    assert smallest.ram_bytes < 0.3 * bound and smallest.estimated_instructions > layer_by_layer.estimated_instructions
    pointwise = [
        op
        for op in smallest.graph.operators
        if op.kind == "CONV_2D" and smallest.graph.storage(op.outputs[0]) == smallest.graph.storage(op.inputs[0])
    ]
    assert pointwise, "the smallest plan writes pointwise layers over their input"


@pytest.mark.parametrize("fraction", [2.0, 0.9, 0.6, 0.45, 0.35])
def test_the_fastest_plan_that_fits_is_chosen(plans, bound, fraction):
    limit = int(fraction * bound)
    chosen = choose_plan(plans, limit)
    assert chosen.ram_bytes <= limit
    assert all(p.estimated_instructions >= chosen.estimated_instructions for p in plans if p.ram_bytes <= limit)
    if fraction >= 1:
        assert chosen.name == "layer by layer"


def test_the_pass_keeps_the_default_plan_where_it_fits(prepared):
    default = plan_memory(patch_stage(prepared))
    g = plan_for_budget(prepared, 4 * 1024 * 1024, DSP, keep_default=True)
    assert [p["plan"] for p in g.ram_plan["plans"]] == [g.ram_plan["chosen"]]
    assert g.arena_bytes == default.arena_bytes and g.patches["grid"] == default.patches["grid"]
    assert prepared.patches == {} and prepared.ram_plan == {}, "the pass leaves its input alone"


def test_the_board_budget_replans_when_the_default_does_not_fit(bound):
    default = compile_model(MOBILENET, features=DSP).metadata
    need = default["arena_bytes"] + default["scratch_bytes"]
    own = sum(t["bytes"] for t in default["inputs"] + default["outputs"])
    meta = compile_model(MOBILENET, features=DSP, ram_available=need - 1000 + own).metadata
    assert meta["arena_bytes"] + meta["scratch_bytes"] <= need - 1000
    assert meta["ram_budget"]["limit_source"] == "the board's free RAM" and len(meta["ram_budget"]["plans"]) > 3


def test_no_plan_fits_names_the_smallest_peak_and_its_layer(prepared, plans):
    smallest = min(p.ram_bytes for p in plans)
    with pytest.raises(NoPlanFits) as error:
        plan_for_budget(prepared, smallest - 1, DSP)
    assert error.value.smallest.ram_bytes == smallest
    assert f"smallest needs {smallest:,} B" in str(error.value) and "its peak at layer" in str(error.value)
    assert isinstance(error.value, BoardError)


def test_cli_ram_limit_below_every_plan_is_one_line_and_non_zero(tmp_path):
    run = cli("compile", MOBILENET, "--board", "mps2_an386", "--ram-limit", "12000", "-o", tmp_path / "out")
    assert run.returncode != 0 and not (tmp_path / "out").exists()
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "no memory plan fits --ram-limit 12,000 B" in lines[0], run.stderr
    assert "its peak at layer conv_" in lines[0] and "Traceback" not in run.stderr


def test_cli_analyze_lists_the_plans_tried_and_the_choice(bound):
    limit = int(0.6 * bound)
    run = cli("analyze", MOBILENET, "--board", "mps2_an386", "--ram-limit", limit)
    assert run.returncode == 0, run.stderr
    assert f"RAM budget: {limit:,} B of arena + scratch (--ram-limit)" in run.stdout
    chosen = [line for line in run.stdout.splitlines() if line.startswith(" -> ")]
    assert len(chosen) == 1 and "layer by layer" in run.stdout


def test_a_forced_grid_over_the_limit_is_refused():
    with pytest.raises(BoardError, match="over the RAM limit of 15,000 B"):
        compile_model(MOBILENET, features=DSP, patches="2x2", ram_limit=15000)


# all long tests (40 s each under the sanitizers): the default suite holds a budgeted MobileNet
# bit-exact on a board (below) and patch buffers in bounds under ASan (tests/test_patches.py)
@pytest.mark.long
@pytest.mark.parametrize("fraction,kernels", [(0.6, "fast"), (0.35, "fast"), (0.28, "fast"), (0.35, "reference")])
def test_mobilenet_under_the_budget_is_bit_exact_on_the_host(tmp_path, bound, fraction, kernels):
    """0.28x: pointwise layers in place (im2col); the reference loops never run a pointwise layer in place."""
    library = assert_matches_oracle(
        MOBILENET.read_bytes(),
        tmp_path,
        n_inputs=2,
        features=DSP,
        ram_limit=int(fraction * bound),
        kernels=kernels,
        sanitize=fraction < 0.3,
    )
    meta, g = library.metadata, library.graph
    assert meta["arena_bytes"] + meta["scratch_bytes"] <= fraction * bound
    in_place = [
        op for op in g.operators if op.kind == "CONV_2D" and g.storage(op.outputs[0]) == g.storage(op.inputs[0])
    ]
    if kernels == "reference" or fraction < 0.3:
        assert bool(in_place) == (kernels == "fast")


@needs_board_tools
@pytest.mark.parametrize(
    "board,fraction",
    # the default suite: the M55 at 0.35x; the M4: long
    [
        pytest.param("mps2_an386", 0.6, marks=pytest.mark.long),
        pytest.param("mps2_an386", 0.28, marks=pytest.mark.long),
        ("mps3_an547", 0.35),
    ],
)
def test_mobilenet_under_the_budget_is_bit_exact_on_the_board(tmp_path, bound, board, fraction):
    """M4 at 0.6x of the bound (patches 1x3) and 0.28x (pointwise layers in place too); M55 at 0.35x (a
    finer grid, depthwise layers in place inside the patches, the Helium kernels elsewhere)."""
    run = assert_matches_oracle_on_board(MOBILENET.read_bytes(), tmp_path, board=board, ram_limit=int(fraction * bound))
    assert run.outputs


@pytest.mark.parametrize(
    "model",
    ["mlperf_tiny/kws_ref_model.tflite", "mlperf_tiny/pretrainedResnet_quant.tflite", "mlperf_tiny/ad01_int8.tflite"],
)
def test_the_board_default_keeps_todays_code_where_it_fits(shared_models, model):
    """No explicit limit: a board with room gets exactly the code it got before the budget existed."""
    from microcompiler.boards import load_board
    from microcompiler.targets.footprint import ram_for_models

    board = load_board("mps2_an386")
    before = compile_model(shared_models / model, features=board.cpu.features)
    after = compile_model(shared_models / model, features=board.cpu.features, ram_available=ram_for_models(board))
    assert after.files == before.files
    assert after.metadata["ram_budget"]["chosen"].startswith("default")
