"""Every operator's shape, count, type and scale rules, checked at import (issue 24, group 3).

Each rule is held by a mutated single-operator model (tests/model_builder.py) that TFLM also
refuses, or whose arithmetic TFLM leaves undefined, or that would make the generated C read or write
past a buffer: microcompiler refuses it in one line, as a damaged or inconsistent model
(ModelFormatError) where the file contradicts itself. The unmutated model runs like TFLM on the
host with ASan/UBSan. Several were found by the structure-aware mutator (scripts/fuzz_models.py
--structured --run) and by sweeping every operator seed of tests/fuzz/op_seeds.py.
"""

from __future__ import annotations

import flatbuffers
import model_builder as mb
import numpy as np
import pytest
from elementwise_models import elementwise_model
from fuzz.model_mutations import seed_bytes
from fuzz.op_seeds import transpose_conv_int8
from harness import assert_matches_oracle, cli, compile_bytes
from oracle import Oracle, TFLMError
from test_reliability_models import refused, tflm_refuses
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from microcompiler.errors import MicrocompilerError, ModelFormatError, UnsupportedModelError


def edited(model: bytes, edit) -> bytes:
    """``model`` with ``edit(ModelT)`` applied (the object API of the schema)."""
    m = fb.ModelT.InitFromPackedBuf(model, 0)
    edit(m)
    builder = flatbuffers.Builder(1024)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


# ---- requantization scales that no int32 multiplier holds (TFLM saturates, then overflows) ----


def mul_int8(a_scale: float = 0.05) -> bytes:
    return elementwise_model("MUL", "int8", [[1, 3, 4], [1, 1, 4]], quant=[(a_scale, -3), (0.1, 2), (0.08, 5)])


def sum_int8(x_scale: float = 0.05) -> bytes:
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 3, 4, 2], "int8", scale=x_scale, zero_point=-3)
    axis = b.constant("axis", np.array([1, 2], np.int32))
    y = b.activation("y", [1, 1, 1, 2], "int8", scale=0.1, zero_point=2)
    b.op("SUM", [x, axis], [y], mb.reducer_options(True))
    return b.finish([x], [y])


@pytest.mark.parametrize(
    "make, kind",
    [(mul_int8, "MUL"), (sum_int8, "SUM")],
    ids=["mul", "sum"],
)
def test_a_requantization_scale_past_2_to_the_30_is_refused_as_damaged(tmp_path, make, kind):
    """Found by the mutator: MUL with an input scale of 3e38 and SUM with 1e38 gave other answers than
    TFLM, whose saturated multiplier overflows int32 (undefined): one rule in ops/quant.py's
    quantize_multiplier for every kernel."""
    refused(make(3e38), tmp_path / "bad", f"({kind})", "2^30", "damaged", error=ModelFormatError)
    assert_matches_oracle(make(), tmp_path / "ok", n_inputs=2, sanitize=True)


@pytest.mark.parametrize("scale, what", [(1e-30, "small"), (1e38, "large")])
@pytest.mark.parametrize("kind", ["TANH", "LOGISTIC"])
def test_an_int8_input_scale_outside_tflms_input_rescaling_is_refused(tmp_path, kind, scale, what):
    """Found by the mutator: TANH with an input scale of 1e-30 raised ValueError (negative shift
    count), and with 1e38 differed from TFLM: TFLM shifts by a negative count, or by 153 bits, there
    (undefined)."""
    out = (1 / 128, 0) if kind == "TANH" else (1 / 256, -128)
    model = elementwise_model(kind, "int8", [[1, 8]], quant=[(scale, -3), out])
    refused(model, tmp_path / "bad", f"({kind})", f"input scale is too {what}", error=ModelFormatError)
    proc = cli("compile", _write(tmp_path, model), "-o", tmp_path / "out")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    ok = elementwise_model(kind, "int8", [[1, 8]], quant=[(0.05, -3), out])
    assert_matches_oracle(ok, tmp_path / "ok", n_inputs=2, sanitize=True)


def _write(tmp_path, model: bytes):
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    return path


# ---- shapes: what TFLM's prepare steps check ----


@pytest.mark.parametrize("kind", ["EXP", "ROUND"])
def test_exp_and_round_need_the_same_input_and_output_shape_as_in_tflm(tmp_path, kind):
    """TFLM's exp.cc and round.cc check HaveSameShapes: [2, 5] into [2, 5, 1] fails to allocate."""
    model = elementwise_model(kind, "float32", [[2, 5]], out_shape=[2, 5, 1])
    assert tflm_refuses(model)
    refused(model, tmp_path / "bad", "differ (TFLM requires the same shape)", error=ModelFormatError)
    assert_matches_oracle(elementwise_model(kind, "float32", [[2, 5]]), tmp_path / "ok", sanitize=True)


def test_an_elementwise_output_of_another_size_is_refused_as_inconsistent(tmp_path):
    """A [2, 5] RELU into a [2, 6] output: the kernel's loop covers one of the two sizes only."""
    model = elementwise_model("RELU", "float32", [[2, 5]], out_shape=[2, 6])
    refused(model, tmp_path, "differ in size", error=ModelFormatError)


def test_transpose_conv_per_channel_scales_along_another_dimension_are_refused(tmp_path):
    """Found by the operator sweep: per-channel weight scales with quantized_dimension 5 (of a 4-D
    filter) compiled; TFLM fails to allocate. TRANSPOSE_CONV now shares conv_common's
    check_weights_and_bias with CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED."""
    model = transpose_conv_int8(weight_axis=5)
    assert tflm_refuses(model)
    refused(model, tmp_path / "bad", "quantized along dimension 0, not 5", error=ModelFormatError)
    assert_matches_oracle(transpose_conv_int8(), tmp_path / "ok", n_inputs=2, sanitize=True)


# ---- generated C that did not compile ----


def test_batch_matmul_int8_with_a_depth_of_4_to_7_compiles_warning_free(tmp_path):
    """Found by the operator seeds: [2, 3, 4] x [2, 4, 5] (both activations) declared a 'stride' the
    cols4 kernel never used, and -Werror refused the generated C."""
    b = mb.ModelBuilder()
    x = b.activation("x", [2, 3, 4], "int8", scale=0.05, zero_point=1)
    w = b.activation("w", [2, 4, 5], "int8", scale=0.04, zero_point=-2)
    y = b.activation("y", [2, 3, 5], "int8", scale=0.3, zero_point=0)
    b.op("BATCH_MATMUL", [x, w], [y], mb._opts("BatchMatMulOptions", adjX=False, adjY=False))
    assert_matches_oracle(b.finish([x, w], [y]), tmp_path, n_inputs=2, sanitize=True)


# ---- options TFLM obeys literally ----


@pytest.mark.parametrize("kind", ["PACK", "UNPACK"])
def test_pack_and_unpack_with_a_count_of_0_are_refused(tmp_path, kind):
    """Found by the mutator: UNPACK with num 0 unpacked its input; TFLM unpacks num outputs, so it
    writes none (and PACK with values_count 0 packs none): the outputs differed."""
    import movement_models as mm

    def make(n):
        if kind == "UNPACK":
            return mm.single_op("UNPACK", [2, 3], "int8", [], [[2], [2], [2]], mm.unpack_options(n, 1))
        return mm.single_op(
            "PACK", [2, 3], "int8", [], [[2, 2, 3]], mm.pack_options(n, 1), extra_inputs=[([2, 3], "int8")]
        )

    refused(make(0), tmp_path / "bad", f"({kind})", "TFLM", error=ModelFormatError)
    assert_matches_oracle(make(3 if kind == "UNPACK" else 2), tmp_path / "ok", n_inputs=2, sanitize=True)


# ---- control flow: subgraph indices, counts, empty and recursive subgraphs ----


def _with_subgraph_index(model: bytes, subgraph: int, operator: int, field: str, value: int) -> bytes:
    def edit(m):
        setattr(m.subgraphs[subgraph].operators[operator].builtinOptions, field, value)

    return edited(model, edit)


def test_a_subgraph_only_an_uncalled_subgraph_calls_is_planned_first(tmp_path):
    """Found by sweeping control-flow mutants: an IF whose branches both name 'else_twice' leaves
    'then_loop' (and the WHILE condition and body it calls) uncalled; planning it before its callees
    raised KeyError in the memory planner. TFLM prepares every subgraph and runs the model."""
    from flow_models import nested_if_while_int8

    model = _with_subgraph_index(nested_if_while_int8(), 0, 0, "thenSubgraphIndex", 4)
    inputs = [
        [np.array([flag], bool), np.array([3], np.int32), np.arange(6, dtype=np.int8).reshape(1, 6)] for flag in (1, 0)
    ]
    assert_matches_oracle(model, tmp_path, inputs=inputs, sanitize=True)


def control_flow_mutants():
    """Every subgraph index of every control-flow operator set to each subgraph, -1 and past the end;
    every subgraph input/output list emptied, cut short and lengthened; every subgraph emptied."""
    from flow_models import accumulator_int8, if_int8, nested_if_while_int8, while_int8

    for name, model in (
        ("while", while_int8()),
        ("if", if_int8()),
        ("nested", nested_if_while_int8()),
        ("call_once", accumulator_int8()),
    ):
        base = fb.ModelT.InitFromPackedBuf(model, 0)
        n = len(base.subgraphs)
        for s, sub in enumerate(base.subgraphs):
            for o, op in enumerate(sub.operators):
                options = op.builtinOptions
                for field in [f for f in vars(options) if "ubgraph" in f] if options is not None else []:
                    for value in (*range(n), -1, n, 2**31 - 1):
                        yield (
                            f"{name}: subgraph {s} operator {o} {field} {value}",
                            _with_subgraph_index(model, s, o, field, value),
                        )
            for what in ("inputs", "outputs"):
                values = list(getattr(sub, what) if getattr(sub, what) is not None else [])
                for changed in ([], values[:-1], values + values[-1:]):
                    yield (
                        f"{name}: subgraph {s} {what} {changed}",
                        edited(
                            model, lambda m, s=s, what=what, changed=changed: setattr(m.subgraphs[s], what, changed)
                        ),
                    )
            if s:
                yield (
                    f"{name}: subgraph {s} empty",
                    edited(model, lambda m, s=s: m.subgraphs.__setitem__(s, fb.SubGraphT())),
                )


def test_control_flow_mutants_compile_or_are_refused_in_one_line(tmp_path):
    """Issue 24 saw an IndexError in control flow: WHILE/IF/CALL_ONCE with out-of-range or recursive
    subgraph indices, input/output count mismatches and empty subgraphs compile or are refused in
    one line, never a traceback (the mutants that compile run like TFLM: scripts/fuzz_models.py)."""
    compiled = refused_count = 0
    for note, model in control_flow_mutants():
        try:
            compile_bytes(model, tmp_path / "out")
            compiled += 1
        except MicrocompilerError as exc:
            assert "\n" not in str(exc).strip(), f"{note}: {exc}"
            refused_count += 1
    assert compiled and refused_count > 50


# ---- the tests' oracle is bounded too ----


def test_the_tests_oracle_stops_an_endless_model_and_carries_on():
    """tests/oracle.py runs TFLM in a child process (the bounded runner validate uses): a WHILE that
    loops for ever stops after the oracle's timeout instead of hanging the test process, and the next
    Oracle gets a fresh child."""
    import time

    from flow_models import while_int8

    endless = Oracle(while_int8(), timeout=2)
    started = time.monotonic()
    with pytest.raises(TFLMError, match="did not finish"):
        endless.run([np.array([2**31 - 1], np.int32), np.ones((1, 6), np.int8)])
    assert time.monotonic() - started < 30
    relu = elementwise_model("RELU", "float32", [[4]])
    x = np.array([-1, 0, 2, -3], np.float32)
    assert np.array_equal(Oracle(relu).run([x])[0], np.maximum(x, 0))


def test_a_constant_listed_as_a_model_input_is_refused(tmp_path):
    """Found by the mutator: BATCH_TO_SPACE_ND's constant block shape listed as a model input; TFLM
    let the caller's values overwrite it, microcompiler folded the constant: the outputs differed."""
    import movement_models as mm

    model = mm.single_op(
        "BATCH_TO_SPACE_ND",
        [4, 2, 2, 1],
        "int8",
        [np.array([2, 2], np.int32), np.zeros((2, 2), np.int32)],
        [[1, 4, 4, 1]],
    )
    bad = edited(model, lambda m: setattr(m.subgraphs[0], "inputs", list(m.subgraphs[0].inputs) + [1]))
    refused(bad, tmp_path / "bad", "model input tensor 1", "is a constant", error=ModelFormatError)
    assert_matches_oracle(model, tmp_path / "ok", n_inputs=2, sanitize=True)


def test_a_softmax_without_options_has_tflms_beta_of_0(tmp_path):
    """Found by the mutator: RELU's opcode turned into SOFTMAX (no SoftmaxOptions) ran with beta 1;
    TFLM's parameters without an options table are zero (beta 0: every output 1/n)."""
    model = elementwise_model("SOFTMAX", "float32", [[1, 7]])
    x = [np.linspace(-2, 3, 7, dtype=np.float32).reshape(1, 7)]
    assert np.allclose(Oracle(model).run(x)[0], 1 / 7)
    assert_matches_oracle(model, tmp_path, inputs=[x], sanitize=True)


# ---- an options table of another operator's type (found by the mutator: seed 31, mutant 7450) ----


def test_another_operators_options_table_is_refused_as_damaged(tmp_path):
    """A convolution whose operator code became DEPTHWISE_CONV_2D keeps the ADD's options table. TFLM
    reads options only as the operator's own type, so its depthwise parameters stay zero (stride 0),
    where the schema's defaults (stride 1) computed other outputs than TFLM's: refused as damaged."""
    model = seed_bytes("built:conv_add_float")  # the mutator's seed: a float CONV_2D, then an ADD
    add_code = next(
        i
        for i, c in enumerate(fb.ModelT.InitFromPackedBuf(model, 0).operatorCodes)
        if c.builtinCode == fb.BuiltinOperator.ADD
    )

    def to_depthwise(m):
        m.operatorCodes[add_code].builtinCode = fb.BuiltinOperator.DEPTHWISE_CONV_2D
        m.operatorCodes[add_code].deprecatedBuiltinCode = fb.BuiltinOperator.DEPTHWISE_CONV_2D

    refused(edited(model, to_depthwise), tmp_path, "DEPTHWISE_CONV_2D", "AddOptions", error=ModelFormatError)
    # the unmutated model (each operator with its own options) still runs like TFLM
    assert_matches_oracle(model, tmp_path / "good")


def test_mirror_pad_without_an_options_table_pads_as_tflm_does(tmp_path):
    """No options table: TFLM's mirror-pad parameters stay zeroed and it copies SYMMETRIC, where the
    schema's REFLECT gave other outputs (found by the mutator: seed 31, mutant 8787, a PAD whose
    operator code became MIRROR_PAD)."""
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 2, 3], "int8", scale=0.05, zero_point=-3)
    pads = b.constant("paddings", np.array([[0, 0], [1, 1], [0, 2]], dtype=np.int32))
    y = b.activation("y", [1, 4, 5], "int8", scale=0.05, zero_point=-3)
    b.op("MIRROR_PAD", [x, pads], [y])
    assert_matches_oracle(b.finish([x], [y]), tmp_path, n_inputs=3)


# ---- constants listed as a subgraph's inputs or outputs (issue 24) ----


def _if_then_branch_reads_k_twice(m):
    """if_int8's then-branch 'then_add' (x, k, y) takes its input in the constant k, and adds k to k."""
    m.subgraphs[1].inputs = [1]
    m.subgraphs[1].operators[0].inputs = [1, 1]


def _while_body_takes_count_in_one(m):
    """while_int8's body (i, count, acc, x, one, ...) takes the loop count in its constant 'one'."""
    m.subgraphs[2].inputs = [0, 4, 2, 3]
    m.subgraphs[2].outputs = [5, 4, 6, 3]


def test_a_constant_listed_as_a_subgraphs_input_is_refused_as_damaged(tmp_path):
    """TFLM copies the caller's values over the constant's bytes in the model (then k + k is x + x,
    and the loop counter steps by the count), where microcompiler folded the constant: the outputs
    differed. Refused as damaged, as a constant listed as a model input is."""
    from flow_models import if_int8, while_int8

    x = np.arange(6, dtype=np.int8).reshape(1, 6)
    model = edited(if_int8(), _if_then_branch_reads_k_twice)
    assert len(set(Oracle(model).run([np.array([True]), x])[0].ravel())) > 1  # TFLM: k + k follows x
    refused(
        model, tmp_path / "if", "subgraph 1 ('then_add') input tensor 1 ('k') is a constant", error=ModelFormatError
    )
    model = edited(while_int8(), _while_body_takes_count_in_one)
    assert Oracle(model).run([np.array([3], np.int32), x])[0].tolist() == x.tolist()  # one turn: i = 0 + 3
    refused(
        model,
        tmp_path / "while",
        "subgraph 2 ('loop_body') input tensor 4 ('one') is a constant",
        error=ModelFormatError,
    )
    assert_matches_oracle(if_int8(), tmp_path / "ok", inputs=[[np.array([f]), x] for f in (True, False)], sanitize=True)


def test_a_constant_returned_by_a_subgraph_is_refused_not_left_unwritten(tmp_path):
    """An IF branch returning its constant k printed 0s (nothing wrote the IF's output; TFLM copies
    k), and a WHILE body returning the constant 'one' as the counter looped for ever (TFLM: one turn).
    Refused in one line, as a constant model output is."""
    from flow_models import if_int8, while_int8

    def then_returns_k(m):
        m.subgraphs[1].outputs = [1]
        m.subgraphs[0].tensors[2].quantization = m.subgraphs[1].tensors[1].quantization

    x = np.arange(6, dtype=np.int8).reshape(1, 6)
    model = edited(if_int8(), then_returns_k)
    assert Oracle(model).run([np.array([True]), x])[0].tolist() == [[9] * 6]
    refused(model, tmp_path / "if", "subgraph 1 ('then_add') output 0 ('k') is a constant", error=UnsupportedModelError)
    model = edited(while_int8(), lambda m: setattr(m.subgraphs[2], "outputs", [4, 1, 6, 3]))
    assert Oracle(model).run([np.array([1], np.int32), x])[1].tolist() == [1]
    refused(
        model,
        tmp_path / "while",
        "subgraph 2 ('loop_body') output 0 ('one') is a constant",
        error=UnsupportedModelError,
    )


# ---- custom operators' options (found by the mutator's seeds for the signal operators) ----


def test_a_state_buffer_no_microcontroller_holds_is_refused_at_once(tmp_path):
    """Found by the mutator (seed 40, mutant 80): SignalDelay with delay_length 2^31-1 made the
    compile build a [2, 2^31-1] int16 start value for over a minute; TFLM cannot allocate it (and
    crashes). Refused in one line before anything is allocated; a real delay runs like TFLM."""
    import time

    from signal_state_models import delay_model

    model = delay_model((([2, 5], 2**31 - 1),))[0]
    assert tflm_refuses(model)
    started = time.monotonic()
    refused(
        model, tmp_path / "bad", "(SignalDelay)", "state buffer 'delayed'", "[2, 2147483647]", error=ModelFormatError
    )
    assert time.monotonic() - started < 10
    assert_matches_oracle(delay_model((([2, 5], 3),))[0], tmp_path / "ok", n_inputs=2, sanitize=True)


def test_the_fuzzer_compares_only_what_tflm_writes():
    """A SignalFramer's frames when its valid flag is false, SignalEnergy's bins outside its range
    and the fast NMS's detections past their count are whatever TFLM's arena held: the fuzzer
    (scripts/fuzz_models.py --run) compares the rest (seed 40, mutant 192: a framer without prefill)."""
    import test_op_detection_postprocess as dp
    from fuzz.structure_mutations import outputs_agree, tflm_defined
    from signal_state_models import framer_model

    framer = framer_model(((1, 1, 10, 4, False),))[0]
    x = np.arange(4, dtype=np.int16).reshape(1, 4)
    frames, valid = Oracle(framer).run([x])
    assert not valid and tflm_defined(framer, [frames, valid])[0].sum() == 0
    assert tflm_defined(framer, [frames, np.array(True)])[0] is None
    b = mb.ModelBuilder()
    s = b.activation("spectrum", [20], "int16")
    e = b.activation("energy", [10], "uint32")
    b.custom_op("SignalEnergy", [s], [e], {"start_index": 2, "end_index": 9})
    energy = b.finish([s], [e])
    (mask,) = tflm_defined(energy, Oracle(energy).run([np.ones(20, np.int16)]))
    assert mask.tolist() == [False] * 2 + [True] * 7 + [False]
    assert not outputs_agree(np.arange(10), np.arange(10) + 1, mask)
    assert outputs_agree(np.arange(10), np.where(mask, np.arange(10), 99), mask)
    ssd = dp.ssd_model(boxes=6, num_classes=2, opts=dp.options(max_detections=3, num_classes=2))
    outs = Oracle(ssd).run(dp.inputs_for(6, 3, 1))
    n = int(outs[3][0])
    masks = tflm_defined(ssd, outs)
    assert [int(m.sum()) for m in masks[:3]] == [4 * n, n, n] and masks[3] is None


@pytest.mark.parametrize("kind", ["SUB", "SQUARED_DIFFERENCE"])
def test_a_float32_scale_product_past_the_range_prints_no_python_warning(tmp_path, kind):
    """Found by the mutator (seed 40): an output scale near the float32 limit made TFLM's float32
    products inf (as in TFLM) and printed numpy's RuntimeWarning before the answer; the command's
    output is its one line (or the compiled model), nothing from Python."""
    model = elementwise_model(kind, "int8", [[1, 4], [1, 4]], quant=[(0.05, 0), (0.05, 0), (1e36, 0)])
    proc = cli("compile", _write(tmp_path, model), "-o", tmp_path / "out")
    assert "Warning" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 1, proc.stderr


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_a_relu6_input_scale_that_puts_6_beyond_int32_is_refused_as_damaged(tmp_path, dtype):
    """Found by the mutator (seed 45, mutant 3981): RELU6 with an input scale of 1e-30. TFLM converts
    6.0 / scale = 6e30 to int32 (undefined: its build printed -128 everywhere, we printed the clamp
    at 127); no oracle can confirm an answer, so the scale is refused as damaged."""
    zp = -3 if dtype == "int8" else 0
    bad = elementwise_model("RELU6", dtype, [[1, 6]], quant=[(1e-30, zp), (0.05, zp)])
    refused(bad, tmp_path / "bad", "(RELU6)", "beyond int32", "damaged", error=ModelFormatError)
    proc = cli("compile", _write(tmp_path, bad), "-o", tmp_path / "out")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Warning" not in proc.stderr and "Traceback" not in proc.stderr
    ok = elementwise_model("RELU6", dtype, [[1, 6]], quant=[(0.05, zp), (0.05, zp)])
    assert_matches_oracle(ok, tmp_path / "ok", n_inputs=2, sanitize=True)
