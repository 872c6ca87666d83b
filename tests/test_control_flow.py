"""Models with several subgraphs (IF, WHILE, CALL_ONCE) and resource variables (VAR_HANDLE,
READ_VARIABLE, ASSIGN_VARIABLE): sequences compared step by step with the TFLM interpreter invoked
the same number of times on the same inputs, on both host executors, and <model>_reset()."""

from __future__ import annotations

import numpy as np
import pytest
from flow_models import accumulator_int8, if_int8, nested_if_while_int8, while_int8
from harness import compile_bytes
from oracle import Oracle
from test_state import STEPS, assert_steps_match

from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend.tflite import parse_tflite
from microcompiler.host import HostProgram


def run_both(model: bytes, tmp_path, seq, executors=("aot", "graph"), sanitize=False):
    """The first STEPS, <model>_reset(), the same STEPS again; compared with a TFLM interpreter invoked
    STEPS times and (after our reset) with a new one: a reset is a re-initialisation."""
    library = compile_bytes(model, tmp_path)
    want = Oracle(model).run_sequence(seq)
    for executor in executors:
        program = HostProgram(library, tmp_path / f"build_{executor}", sanitize=sanitize, executor=executor)
        ours = [r.outputs for r in program.run(seq + seq, reset_every=len(seq))]
        assert_steps_match(ours[: len(seq)], want, f"{executor} executor")
        assert_steps_match(ours[len(seq) :], want, f"{executor} executor after reset")
    return library, want


def int8_sequence(shape, steps: int, seed: int) -> list[list[np.ndarray]]:
    """steps one-input sets of random int8 values."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(-128, 128, shape, dtype=np.int8)] for _ in range(steps)]


def test_accumulator_with_call_once_sequence(tmp_path):
    """var = var + x with a CALL_ONCE that sets var to a constant first: bit-exact with TFLM over 12
    inferences; the output depends on every earlier input (the same input gives different outputs)."""
    x = np.full((1, 8), 5, np.int8)
    seq = [[x]] * 3 + int8_sequence((1, 8), STEPS - 3, seed=7)
    library, want = run_both(accumulator_int8(), tmp_path, seq, sanitize=True)
    assert not np.array_equal(want[0][0], want[1][0])
    meta = library.metadata
    assert [s["c_name"] for s in meta["state"]] == ["model_acc", "model_call_once_0_done"]
    ops = library.files["src/model_ops.c"]
    assert "static void model_sg_init(void);" in ops  # the CALL_ONCE subgraph is a function
    assert "if (model_call_once_0_done[0]) return;" in ops


def test_reset_reinitialises_where_tflm_reset_does_not_rerun_call_once():
    """Pins the one difference: the pinned MicroInterpreter::Reset() restores resource variables to
    their default (zero point) but leaves CALL_ONCE marked as run, so its first output after a reset
    differs from a new interpreter's; <model>_reset() is a re-initialisation (tested above)."""
    model = accumulator_int8()
    x = np.full((1, 8), 5, np.int8)
    fresh = Oracle(model).run([x])[0]
    oracle = Oracle(model)
    oracle.run_sequence([[x]] * 3)
    oracle.reset()
    assert not np.array_equal(oracle.run([x])[0], fresh)


def test_if_sequence(tmp_path):
    rng = np.random.default_rng(3)
    seq = [[np.array([bool(rng.integers(2))]), rng.integers(-128, 128, (1, 6), dtype=np.int8)] for _ in range(STEPS)]
    assert {bool(s[0][0]) for s in seq} == {True, False}
    library, _ = run_both(if_int8(), tmp_path, seq)
    ops = library.files["src/model_ops.c"]
    assert "static void model_then_add(" in ops and "static void model_else_double(" in ops
    assert library.graph.subgraphs[2].arena_bytes > 0  # else_double's intermediate lives in its arena


def test_resource_shared_across_subgraphs_is_one_variable():
    graph = parse_tflite(accumulator_int8())
    keys = [t.variable for g in graph.all_graphs() for t in g.tensors if t.variable and not t.variable.startswith("#")]
    assert keys == ["/acc", "/acc"]
    assert not any(op.kind == "VAR_HANDLE" for g in graph.all_graphs() for op in g.operators)


def test_recursion_is_refused():
    from model_builder import ModelBuilder, if_options

    b = ModelBuilder()
    s = b.subgraph("loop")
    c = s.constant("c", np.array([True]))
    v = s.activation("v", [1], "float32")
    w = s.activation("w", [1], "float32")
    s.op("IF", [c, v], [w], if_options(1, 1))
    s.set_io([v], [w])
    c0 = b.activation("c", [1], "bool")
    x = b.activation("x", [1], "float32")
    y = b.activation("y", [1], "float32")
    b.op("IF", [c0, x], [y], if_options(1, 1))
    with pytest.raises(UnsupportedModelError, match="calls itself"):
        parse_tflite(b.finish([c0, x], [y]))


def test_while_sequence(tmp_path):
    """A WHILE whose trip count is an input (0 to 5 turns), with pass-through loop values."""
    rng = np.random.default_rng(5)
    seq = [[np.array([s % 6], np.int32), rng.integers(-20, 20, (1, 6), dtype=np.int8)] for s in range(STEPS)]
    library, want = run_both(while_int8(), tmp_path, seq, sanitize=True)
    assert [int(w[1][0]) for w in want] == [s % 6 for s in range(STEPS)]
    ops = library.files["src/model_ops.c"]
    assert "for (;;) {" in ops and "static void model_loop_body(" in ops


def test_nested_control_flow_sequence(tmp_path):
    """A WHILE inside an IF branch: the loop's subgraph arena is planned inside the branch's arena,
    which lives in the main arena only while the IF runs."""
    rng = np.random.default_rng(9)
    seq = [
        [np.array([s % 3 != 1]), np.array([s % 4], np.int32), rng.integers(-20, 20, (1, 6), dtype=np.int8)]
        for s in range(STEPS)
    ]
    library, _ = run_both(nested_if_while_int8(), tmp_path, seq, sanitize=True)
    graph = library.graph
    (if_op,) = graph.operators
    then_g = graph.subgraphs[1]
    (while_op,) = then_g.operators
    arena = if_op.outputs[-1]
    assert graph.offsets[arena] + graph.tensors[arena].nbytes <= graph.arena_bytes
    assert graph.tensors[arena].nbytes >= then_g.arena_bytes >= while_op.notes.subgraph_arena


def test_subgraph_arena_is_live_only_during_the_call(tmp_path):
    """The IF's subgraph arena is a buffer of the main arena that other tensors may reuse after it."""
    from microcompiler.passes.memory_plan import arena_buffers

    library = compile_bytes(if_int8(), tmp_path)
    graph = library.graph
    (op,) = graph.operators
    (buf,) = [b for b in arena_buffers(graph) if b.tensor == op.outputs[-1]]
    assert buf.first == buf.last == 0
    assert op.notes.subgraph_arena == max(s.arena_bytes for s in graph.subgraphs.values()) > 0


def _if_model(cond_dtype="bool", then_index=1, branch_dtype="float32"):
    from model_builder import ModelBuilder, if_options

    b = ModelBuilder()
    s = b.subgraph("branch")
    v = s.activation("v", [2], branch_dtype)
    w = s.activation("w", [2], branch_dtype)
    s.op("ADD", [v, v], [w])
    s.set_io([v], [w])
    c = b.activation("c", [1], cond_dtype)
    x = b.activation("x", [2], "float32")
    y = b.activation("y", [2], "float32")
    b.op("IF", [c, x], [y], if_options(then_index, 1))
    return b.finish([c, x], [y])


@pytest.mark.parametrize(
    "model,message,error",
    [
        (lambda: _if_model(cond_dtype="int32"), "must be a bool tensor", UnsupportedModelError),
        (lambda: _if_model(then_index=7), "calls subgraph 7, but the model's subgraphs are 1 to 1", None),
        (lambda: _if_model(then_index=0), "calls subgraph 0", None),
        (lambda: _if_model(branch_dtype="int32"), "do not match in number, type or size", UnsupportedModelError),
    ],
)
def test_bad_control_flow_is_refused(model, message, error):
    from microcompiler.errors import ModelFormatError

    with pytest.raises(error or ModelFormatError, match=message):
        parse_tflite(model())


def test_resource_passed_to_a_subgraph_is_refused_in_one_line(tmp_path):
    from model_builder import ModelBuilder, if_options, var_handle_options
    from test_errors import assert_one_line_error, cli

    b = ModelBuilder()
    s = b.subgraph("branch")
    hv = s.activation("h", [], "resource")
    s.set_io([hv], [])
    c = b.activation("c", [1], "bool")
    h = b.activation("h", [], "resource")
    y = b.activation("y", [1], "float32")
    b.op("VAR_HANDLE", [], [h], var_handle_options("v"))
    b.op("IF", [c, h], [], if_options(1, 1))
    b.op("READ_VARIABLE", [h], [y])
    model = tmp_path / "m.tflite"
    model.write_bytes(b.finish([c], [y]))
    proc = cli("compile", model, "-o", tmp_path / "out")
    assert_one_line_error(proc, "resource", "not supported yet")


def test_example_models_are_the_tested_ones():
    """examples/control_flow (used by docs/state.md) holds exactly what tests/flow_models.py builds."""
    from pathlib import Path

    import flow_models

    here = Path(__file__).resolve().parents[1] / "examples/control_flow"
    for name in ("accumulator_int8", "if_int8", "while_int8"):
        assert (here / f"{name}.tflite").read_bytes() == getattr(flow_models, name)(), (
            f"regenerate with python examples/control_flow/make_models.py ({name})"
        )


def test_metadata_lists_the_subgraphs(tmp_path):
    library = compile_bytes(while_int8(), tmp_path)
    subs = library.metadata["subgraphs"]
    assert [(s["index"], s["name"], s["function"]) for s in subs] == [
        (1, "loop_cond", "model_loop_cond"),
        (2, "loop_body", "model_loop_body"),
    ]
    assert [op["kind"] for op in subs[1]["operators"]] == ["ADD", "ADD"]
    assert [op["kind"] for op in library.metadata["operators"]] == ["WHILE"]
    assert library.metadata["total_macs"] == sum(op["macs"] for s in subs for op in s["operators"])


def test_variables_in_a_single_subgraph_model_sequence(tmp_path):
    """No CALL_ONCE: the variable starts from TFLM's default (its zero point) and carries over."""
    seq = int8_sequence((1, 8), STEPS, seed=21)
    library, want = run_both(accumulator_int8(call_once=False), tmp_path, seq, executors=("graph",))
    assert not library.graph.subgraphs and library.metadata["state_bytes"] == 8
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(want, want[1:]))


def test_control_flow_without_its_options_is_a_damaged_file(tmp_path):
    from test_errors import assert_one_line_error, cli, one_op_model

    model = tmp_path / "m.tflite"
    model.write_bytes(one_op_model("WHILE"))
    assert_one_line_error(
        cli("compile", model, "-o", tmp_path / "out"), "WHILE", "no options naming", "the file is corrupted"
    )
