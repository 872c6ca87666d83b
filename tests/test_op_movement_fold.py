"""What the data-movement kernels share: constant subgraphs fold away (the copy plans run at compile
time), and int8 values are copied raw whatever the quantization parameters, as TFLM does."""

import numpy as np
from harness import assert_matches_oracle
from model_builder import ModelBuilder, add_options
from movement_models import (
    gather_options,
    pack_options,
    side_by_side,
    split_options,
    strided_slice_options,
    unpack_options,
)


def test_a_constant_subgraph_of_movement_operators_folds_away(tmp_path):
    """const -> TRANSPOSE -> REVERSE_V2 -> STRIDED_SLICE -> SPLIT -> PACK -> UNPACK -> GATHER ->
    BROADCAST_TO, and FILL(const): all folded; only the ADDs that use them run."""
    b = ModelBuilder()

    def const(values, dtype=np.int32):
        return b.constant(f"k{len(b.tensors)}", np.array(values, dtype))

    def op(kind, inputs, shapes, options=None):
        ys = [b.activation(f"{kind.lower()}{len(b.tensors)}", s, "float32") for s in shapes]
        b.op(kind, inputs, ys, options)
        return ys

    c = b.constant("c", np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5)
    (t,) = op("TRANSPOSE", [c, const([2, 0, 1])], [[4, 2, 3]])
    (r,) = op("REVERSE_V2", [t, const([1, 2])], [[4, 2, 3]])
    (s,) = op(
        "STRIDED_SLICE",
        [r, const([0, 1, 2]), const([4, 0, 0]), const([1, 1, -2])],
        [[4, 2]],
        strided_slice_options(end_mask=4, shrink_axis_mask=2),
    )
    h0, h1 = op("SPLIT", [const(0), s], [[2, 2], [2, 2]], split_options(2))
    (p,) = op("PACK", [h1, h0], [[2, 2, 2]], pack_options(2, 1))
    u0, u1 = op("UNPACK", [p], [[2, 2], [2, 2]], unpack_options(2, 2))
    (g,) = op("GATHER", [u1, const([1, 1, 0])], [[3, 2]], gather_options(0))
    (bt,) = op("BROADCAST_TO", [g, const([2, 3, 2])], [[2, 3, 2]])
    (f,) = op("FILL", [const([2, 3, 2]), b.constant("v", np.float32([0.25]))], [[2, 3, 2]])
    b.tensors[b.operators[-1].inputs[1]].shape = []  # FILL's value is a scalar
    x = b.activation("x", [2, 3, 2], "float32")
    y0, y1 = b.activation("y0", [2, 3, 2], "float32"), b.activation("y1", [2, 3, 2], "float32")
    b.op("ADD", [x, bt], [y0], add_options())
    b.op("ADD", [x, f], [y1], add_options())
    library = assert_matches_oracle(b.finish([x], [y0, y1]), tmp_path, n_inputs=2)
    assert [o["kind"] for o in library.metadata["operators"]] == ["ADD", "ADD"]


def test_int8_values_are_copied_raw_whatever_the_quantization(tmp_path):
    """TFLM neither requantizes nor checks scales in these kernels: neither do we."""
    mq = dict(in_quant=(0.05, -3), out_quant=(0.2, 17))
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731
    model = side_by_side(
        [
            (
                "STRIDED_SLICE",
                [4, 5],
                "int8",
                [i32([1, 0]), i32([3, 5]), i32([1, 2])],
                [[2, 3]],
                strided_slice_options(),
                mq,
            ),
            ("SLICE", [4, 5], "int8", [i32([1, 1]), i32([2, 3])], [[2, 3]], None, mq),
            ("TRANSPOSE", [4, 5], "int8", [i32([1, 0])], [[5, 4]], None, mq),
            ("GATHER", [4, 5], "int8", [i32([3, 0])], [[2, 5]], gather_options(), mq),
            ("SPLIT", [4, 6], "int8", [i32(1)], [[4, 3], [4, 3]], split_options(2), dict(const_first=True, **mq)),
            ("UNPACK", [2, 6], "int8", [], [[6], [6]], unpack_options(2, 0), mq),
            ("REVERSE_V2", [4, 5], "int8", [i32([1])], [[4, 5]], None, mq),
            ("BROADCAST_TO", [1, 5], "int8", [i32([3, 5])], [[3, 5]], None, mq),
            ("RESHAPE", [2, 3], "int32", [i32([3, 2])], [[3, 2]], None),
            ("RESHAPE", [2, 3], "int64", [i32([6])], [[6]], None),
            ("RESHAPE", [2, 3], "bool", [i32([1, 6])], [[1, 6]], None),
        ]
    )
    assert_matches_oracle(model, tmp_path, n_inputs=2)
