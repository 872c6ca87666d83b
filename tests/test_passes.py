"""Each pass alone: a function from IR to IR that leaves its input untouched."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from microcompiler.ir import Graph, Operator, Quantization, Tensor
from microcompiler.passes import (
    PIPELINE,
    fold_constants,
    fuse_activations,
    plan_memory,
    remove_dead_code,
    remove_reshapes,
)
from microcompiler.passes.memory_plan import arena_buffers, lower_bound

Q = Quantization([0.1], [-3])


def act(name, shape, quant=Q):
    return Tensor(name, tuple(shape), "int8", quant)


def chain_graph():
    """x -> FC -> a -> RELU -> b -> RESHAPE -> c -> FC -> y, plus a dead FC branch from a."""
    w = Tensor("w", (4, 4), "int8", Quantization([0.01], [0]), np.ones((4, 4), np.int8))
    tensors = [
        act("x", [1, 4]),
        act("a", [1, 4]),
        act("b", [1, 4]),
        act("c", [4]),
        act("y", [1, 4]),
        w,
        act("dead", [1, 4]),
    ]
    ops = [
        Operator("FULLY_CONNECTED", [0, 5], [1], {"activation": "NONE"}, 0),
        Operator("RELU", [1], [2], {}, 1),
        Operator("RESHAPE", [2], [3], {}, 2),
        Operator("FULLY_CONNECTED", [3, 5], [4], {"activation": "NONE"}, 3),
        Operator("FULLY_CONNECTED", [1, 5], [6], {"activation": "NONE"}, 4),
    ]
    return Graph("chain", tensors, ops, [0], [4])


def test_passes_do_not_mutate_their_input():
    g = chain_graph()
    before = repr(g)
    for p in PIPELINE:
        p(g)
    assert repr(g) == before


def test_fuse_activations_folds_relu_into_producer():
    g = remove_dead_code(chain_graph())
    out = fuse_activations(g)
    kinds = [op.kind for op in out.operators]
    assert "RELU" not in kinds
    assert out.operators[0].options["activation"] == "RELU"
    assert out.operators[0].outputs == [2]


def test_fuse_activations_keeps_relu_when_quantization_changes():
    g = remove_dead_code(chain_graph())
    g.tensors[2].quant = Quantization([0.2], [-128])
    assert [op.kind for op in fuse_activations(g).operators].count("RELU") == 1


def test_fuse_activations_keeps_relu_when_producer_output_has_other_readers():
    g = chain_graph()  # the dead FC also reads 'a'
    assert [op.kind for op in fuse_activations(g).operators].count("RELU") == 1


def test_remove_dead_code_drops_unused_branch():
    assert [op.index for op in remove_dead_code(chain_graph()).operators] == [0, 1, 2, 3]


def test_remove_reshapes_aliases_instead_of_copying():
    g = remove_reshapes(chain_graph())
    assert "RESHAPE" not in [op.kind for op in g.operators]
    assert g.storage(3) == 2


def test_reshape_between_two_caller_buffers_stays_a_copy():
    tensors = [act("x", [1, 4]), act("y", [4])]
    g = Graph("r", tensors, [Operator("RESHAPE", [0], [1], {}, 0)], [0], [1])
    assert [op.kind for op in remove_reshapes(g).operators] == ["RESHAPE"]


def test_reshape_into_model_output_makes_producer_write_the_output():
    tensors = [
        act("x", [1, 4]),
        act("a", [1, 4]),
        act("y", [4]),
        Tensor("w", (4, 4), "int8", Quantization([0.01], [0]), np.ones((4, 4), np.int8)),
    ]
    ops = [Operator("FULLY_CONNECTED", [0, 3], [1], {"activation": "NONE"}, 0), Operator("RESHAPE", [1], [2], {}, 1)]
    g = plan_memory(remove_reshapes(Graph("r", tensors, ops, [0], [2])))
    assert g.storage(1) == 2 and g.arena_bytes == 0


def test_fold_constants_evaluates_dequantize_of_a_constant():
    c = Tensor("c", (3,), "int8", Quantization([0.5], [1]), np.array([1, 3, -1], np.int8))
    f = Tensor("f", (3,), "float32")
    x, y = Tensor("x", (3,), "float32"), Tensor("y", (3,), "float32")
    ops = [Operator("DEQUANTIZE", [0], [1], {}, 0), Operator("ADD", [2, 1], [3], {"activation": "NONE"}, 1)]
    g = fold_constants(Graph("f", [c, f, x, y], ops, [2], [3]))
    assert [op.kind for op in g.operators] == ["ADD"]
    np.testing.assert_array_equal(g.tensors[1].data, np.array([0.0, 1.0, -1.0], np.float32))


def test_memory_plan_reaches_lower_bound_on_a_chain():
    g = plan_memory(remove_dead_code(chain_graph()))
    buffers = arena_buffers(g)
    assert g.arena_bytes == lower_bound(buffers, len(g.operators))


@st.composite
def random_dag(draw):
    """A random topologically ordered graph of two-input operators over int8 activations."""
    n_ops = draw(st.integers(1, 14))
    tensors = [act("in", [draw(st.integers(1, 64))])]
    ops = []
    for k in range(n_ops):
        a = draw(st.integers(0, len(tensors) - 1))
        b = draw(st.integers(0, len(tensors) - 1))
        tensors.append(act(f"t{k}", [draw(st.integers(1, 300))]))
        ops.append(Operator("ADD", [a, b], [len(tensors) - 1], {"activation": "NONE"}, k))
    return Graph("dag", tensors, ops, [0], [len(tensors) - 1])


@settings(max_examples=300, deadline=None)
@given(random_dag())
def test_memory_plan_never_overlaps_live_buffers(g):
    g = plan_memory(remove_dead_code(g))
    buffers = arena_buffers(g)
    for i, a in enumerate(buffers):
        off_a = g.offsets[a.tensor]
        assert off_a % a.align == 0
        assert off_a + a.size <= g.arena_bytes
        for b in buffers[i + 1 :]:
            if a.overlaps_in_time(b):
                off_b = g.offsets[b.tensor]
                assert off_a + a.size <= off_b or off_b + b.size <= off_a, (a, b)
    assert g.arena_bytes >= lower_bound(buffers, len(g.operators))


def add_graph(reuse_a_later=False):
    """x -> FC -> a; x -> FC -> b; a + b -> s; s -> FC -> y (optionally a -> FC -> z as well)."""
    w = Tensor("w", (4, 4), "int8", Quantization([0.01], [0]), np.ones((4, 4), np.int8))
    tensors = [
        act("x", [1, 4]),
        act("a", [1, 4]),
        act("b", [1, 4]),
        act("s", [1, 4]),
        act("y", [1, 4]),
        w,
        act("z", [1, 4]),
    ]
    ops = [
        Operator("FULLY_CONNECTED", [0, 5], [1], {"activation": "NONE"}, 0),
        Operator("FULLY_CONNECTED", [0, 5], [2], {"activation": "NONE"}, 1),
        Operator("ADD", [1, 2], [3], {"activation": "NONE"}, 2),
        Operator("FULLY_CONNECTED", [3, 5], [4], {"activation": "NONE"}, 3),
    ]
    outputs = [4]
    if reuse_a_later:
        ops.append(Operator("FULLY_CONNECTED", [1, 5], [6], {"activation": "NONE"}, 4))
        outputs.append(6)
    return Graph("add", tensors, ops, [0], outputs)


def test_memory_plan_runs_elementwise_add_in_place():
    g = plan_memory(add_graph())
    assert g.storage(3) == 1  # the sum is written over its first input, which dies there
    assert g.offsets[1] != g.offsets[2]
    assert g.arena_bytes == 8  # a (then s) and b; without in-place: a, b and s live at the ADD
    assert g.arena_bytes == lower_bound(arena_buffers(g), len(g.operators))


def test_memory_plan_in_place_only_when_the_input_dies():
    g = plan_memory(add_graph(reuse_a_later=True))
    assert g.storage(3) == 2  # 'a' is read later: the sum takes b's memory instead
    g = plan_memory(Graph("g", add_graph().tensors, add_graph().operators[2:3], [1, 2], [3]))
    assert g.storage(3) == 3 and g.arena_bytes == 0  # caller buffers are never shared
