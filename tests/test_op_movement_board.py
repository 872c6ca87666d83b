"""The data-movement family standalone on mps2_an386 (Cortex-M4 in QEMU): one int8 model holding one
instance of each operator side by side (STRIDED_SLICE, SLICE, TRANSPOSE, GATHER, GATHER_ND, SPLIT,
SPLIT_V, UNPACK, PACK, REVERSE_V2, BROADCAST_TO, FILL, SQUEEZE, EXPAND_DIMS, and int32 SHAPE and
BROADCAST_ARGS), every output compared with TFLM."""

import numpy as np
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from model_builder import ModelBuilder
from movement_models import (
    gather_options,
    pack_options,
    q,
    shape_options,
    split_options,
    split_v_options,
    squeeze_options,
    strided_slice_options,
    unpack_options,
)


def movement_model() -> bytes:
    b = ModelBuilder()
    x = b.activation("x", [2, 3, 4], "int8", **q("int8"))
    s = b.activation("s", [], "int8", **q("int8"))
    outputs = []

    def const(values, dtype=np.int32):
        return b.constant(f"c{len(b.tensors)}", np.array(values, dtype))

    def op(kind, inputs, shapes, options=None, dtype="int8"):
        ys = [b.activation(f"{kind.lower()}{k}", shape, dtype, **q(dtype)) for k, shape in enumerate(shapes)]
        b.op(kind, inputs, ys, options)
        outputs.extend(ys)

    op(
        "STRIDED_SLICE",
        [x, const([1, 0, 3]), const([0, 3, 0]), const([1, 2, -1])],
        [[2, 3]],
        strided_slice_options(shrink_axis_mask=1),
    )
    op("SLICE", [x, const([0, 1, 1]), const([2, 2, -1])], [[2, 2, 3]])
    op("TRANSPOSE", [x, const([2, 0, 1])], [[4, 2, 3]])
    op("GATHER", [x, const([2, 0])], [[2, 2, 4]], gather_options(axis=1))
    op("GATHER_ND", [x, const([[1, 2], [0, 0]])], [[2, 4]])
    op("SPLIT", [const(2), x], [[2, 3, 2], [2, 3, 2]], split_options(2))
    op("SPLIT_V", [x, const([1, -1]), const([1])], [[2, 1, 4], [2, 2, 4]], split_v_options(2))
    op("UNPACK", [x], [[3, 4], [3, 4]], unpack_options(2, 0))
    op("PACK", [x, x], [[2, 2, 3, 4]], pack_options(2, 1))
    op("REVERSE_V2", [x, const([1])], [[2, 3, 4]])
    op("BROADCAST_TO", [x, const([2, 2, 3, 4])], [[2, 2, 3, 4]])
    filled = b.activation("filled", [3, 1, 2], "int8", **q("int8"))
    b.op("FILL", [const([3, 1, 2]), s], [filled])
    op("SQUEEZE", [filled], [[3, 2]], squeeze_options([1]))  # an alias: FILL writes the model output
    op("EXPAND_DIMS", [x, const([1])], [[2, 1, 3, 4]])  # model input to model output: a copy
    op("SHAPE", [x], [[3]], shape_options("int32"), dtype="int32")
    op("BROADCAST_ARGS", [const([2, 1, 4]), const([3, 1])], [[3]], dtype="int32")
    return b.finish([x, s], outputs)


@needs_board_tools
def test_movement_family_on_board(tmp_path):
    run = assert_matches_oracle_on_board(movement_model(), tmp_path)
    assert len(run.outputs) == 18
