"""The spatial, resizing, pooling and reduction family run standalone on an emulated Cortex-M4
(mps2_an386): one model holding one int8 instance of each operator side by side (and L2_POOL_2D,
float32 only in TFLM), every output compared with TFLM."""

import numpy as np
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from model_builder import ModelBuilder, _opts, pool_options, reducer_options

Q = dict(scale=0.05, zero_point=-3)


def family_model() -> bytes:
    b = ModelBuilder()
    x = b.activation("x", [1, 4, 4, 8], "int8", **Q)
    f = b.activation("f", [1, 5, 5, 3], "float32")
    i32 = lambda name, v: b.constant(name, np.array(v, dtype=np.int32))  # noqa: E731
    outputs = []

    def op(kind, inputs, shape, options=None, dtype="int8", q=Q):
        y = b.activation(f"y_{kind.lower()}", shape, dtype, **(q or {}))
        b.op(kind, inputs, [y], options)
        outputs.append(y)

    op(
        "PADV2",
        [x, i32("pad", [[0, 0], [1, 1], [0, 2], [0, 0]]), b.constant("pad_value", np.array([-77], dtype=np.int8), **Q)],
        [1, 6, 6, 8],
    )
    op(
        "MIRROR_PAD",
        [x, i32("mirror", [[0, 0], [2, 1], [1, 3], [0, 0]])],
        [1, 7, 8, 8],
        _opts("MirrorPadOptions", mode=0),
    )
    op("DEPTH_TO_SPACE", [x], [1, 8, 8, 2], _opts("DepthToSpaceOptions", blockSize=2))
    op("SPACE_TO_DEPTH", [x], [1, 2, 2, 32], _opts("SpaceToDepthOptions", blockSize=2))
    # No padding: TFLM's SPACE_TO_BATCH_ND pads with uninitialised memory (see test_op_batch_space.py).
    op("SPACE_TO_BATCH_ND", [x, i32("s2b_block", [2, 2]), i32("s2b_pad", [[0, 0], [0, 0]])], [4, 2, 2, 8])
    op("BATCH_TO_SPACE_ND", [outputs[-1], i32("b2s_block", [2, 2]), i32("b2s_crop", [[1, 0], [0, 1]])], [1, 3, 3, 8])
    op(
        "RESIZE_BILINEAR",
        [x, i32("bilinear_size", [7, 5])],
        [1, 7, 5, 8],
        _opts("ResizeBilinearOptions", alignCorners=False, halfPixelCenters=True),
    )
    op(
        "RESIZE_NEAREST_NEIGHBOR",
        [x, i32("nearest_size", [3, 9])],
        [1, 3, 9, 8],
        _opts("ResizeNearestNeighborOptions", alignCorners=True, halfPixelCenters=False),
    )
    op("ARG_MAX", [x, i32("argmax_axis", [3])], [1, 4, 4], _opts("ArgMaxOptions", outputType=2), "int32", None)
    op("ARG_MIN", [x, i32("argmin_axis", [1])], [1, 4, 8], _opts("ArgMinOptions", outputType=2), "int32", None)
    op("REDUCE_MAX", [x, i32("max_axes", [1, 2])], [1, 8], reducer_options(False))
    op("REDUCE_MIN", [x, i32("min_axes", [3])], [1, 4, 4, 1], reducer_options(True))
    op("SUM", [x, i32("sum_axes", [2])], [1, 4, 8], reducer_options(False), q=dict(scale=0.3, zero_point=2))
    op(
        "CUMSUM",
        [x, i32("cumsum_axis", [2])],
        [1, 4, 4, 8],
        _opts("CumsumOptions", exclusive=True, reverse=True),
        q=dict(scale=0.2, zero_point=1),
    )
    op("L2_POOL_2D", [f], [1, 3, 3, 3], pool_options((3, 3), (2, 2), "SAME", "RELU6"), "float32", None)
    return b.finish([x, f], outputs)


@needs_board_tools
def test_spatial_family_on_board(tmp_path):
    run = assert_matches_oracle_on_board(family_model(), tmp_path)
    assert len(run.outputs) == 15
