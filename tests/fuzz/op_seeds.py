"""Single-operator seed models for the structure-aware fuzzer's ``--run`` (scripts/fuzz_models.py):
one small model per operator family the importer accepts, each compiled and run by TFLM as built,
so that mutants of its shapes, types, indices, quantization and options reach every kernel's checks.
Named ``op:<kind>[_<dtype>]``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]


def transpose_conv_int8(weight_axis: int = 0) -> bytes:
    """An int8 TRANSPOSE_CONV [1, 4, 4, 2] -> [1, 4, 4, 2], 3x3, per-channel weights quantized along
    ``weight_axis`` (0 is right)."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import model_builder as mb

    rng = np.random.default_rng(1)
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4, 4, 2], "int8", scale=0.05, zero_point=1)
    w = b.constant(
        "w",
        rng.integers(-127, 128, (2, 3, 3, 2), dtype=np.int8),
        scale=[0.01, 0.02],
        zero_point=[0, 0],
        axis=weight_axis,
    )
    shape = b.constant("shape", np.array([1, 4, 4, 2], np.int32))
    y = b.activation("y", [1, 4, 4, 2], "int8", scale=0.1, zero_point=-1)
    b.op(
        "TRANSPOSE_CONV",
        [shape, w, x],
        [y],
        mb._opts("TransposeConvOptions", padding=mb.PADDINGS["SAME"], strideH=1, strideW=1),
    )
    return b.finish([x], [y])


def op_seeds() -> dict[str, bytes]:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import model_builder as mb
    import movement_models as mm
    from elementwise_models import elementwise_model

    seeds: dict[str, bytes] = {}
    rng = np.random.default_rng(1)

    for kind in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"):
        for dtype in ("int8", "float32"):
            seeds[f"op:{kind}_{dtype}"] = elementwise_model(kind, dtype, [[1, 3, 4], [1, 1, 4]])
    seeds["op:ADD_int16"] = elementwise_model("ADD", "int16", [[2, 4], [2, 4]])
    seeds["op:DIV_float32"] = elementwise_model("DIV", "float32", [[2, 4], [2, 4]])
    for kind in ("LESS", "GREATER_EQUAL", "EQUAL"):
        seeds[f"op:{kind}_int8"] = elementwise_model(kind, "int8", [[2, 4], [1, 4]], out_dtype="bool")
    for kind in ("ABS",):
        seeds[f"op:{kind}_int8"] = elementwise_model(kind, "int8", [[2, 5]])
    for kind in ("EXP", "LOG", "SQRT", "RSQRT", "SIN", "FLOOR", "NEG", "SQUARE", "ROUND"):
        seeds[f"op:{kind}_float32"] = elementwise_model(kind, "float32", [[2, 5]])
    for kind in ("RELU", "RELU6", "TANH", "HARD_SWISH", "ELU", "LEAKY_RELU"):
        seeds[f"op:{kind}_int8"] = elementwise_model(kind, "int8", [[1, 2, 6]])
    seeds["op:LOGISTIC_int16"] = elementwise_model("LOGISTIC", "int16", [[1, 8]], quant=[(1 / 4096, 0), (1 / 32768, 0)])
    seeds["op:LOGISTIC_int8"] = elementwise_model("LOGISTIC", "int8", [[1, 8]], quant=[(0.05, 3), (1 / 256, -128)])
    seeds["op:QUANTIZE_int8"] = elementwise_model(
        "QUANTIZE", "float32", [[1, 6]], out_dtype="int8", quant=[None, (0.05, 3)]
    )
    seeds["op:DEQUANTIZE_int8"] = elementwise_model(
        "DEQUANTIZE", "int8", [[1, 6]], out_dtype="float32", quant=[(0.05, 3), None]
    )
    seeds["op:PRELU_int8"] = elementwise_model(
        "PRELU", "int8", [[1, 2, 3, 4], [1, 1, 1, 4]], consts={1: rng.integers(-50, 50, 4).astype(np.int8)}
    )

    seeds["op:SOFTMAX_int8"] = elementwise_model(
        "SOFTMAX", "int8", [[2, 6]], quant=[(0.1, 0), (1 / 256, -128)], options=mb.softmax_options(1.0)
    )
    seeds["op:LOG_SOFTMAX_int8"] = elementwise_model("LOG_SOFTMAX", "int8", [[2, 6]], quant=[(0.1, 0), (16 / 256, 127)])
    seeds["op:L2_NORMALIZATION_int8"] = elementwise_model(
        "L2_NORMALIZATION", "int8", [[1, 2, 6]], quant=[(0.1, 0), (1 / 128, 0)]
    )

    b = mb.ModelBuilder()
    x = b.activation("x", [1, 5, 5, 3], "int8", scale=0.05, zero_point=1)
    w = b.constant("w", rng.integers(-127, 128, (2, 3, 3, 3), dtype=np.int8), scale=[0.01, 0.02], zero_point=[0, 0])
    bias = b.constant("bias", rng.integers(-300, 300, 2).astype(np.int32))
    y = b.activation("y", [1, 3, 3, 2], "int8", scale=0.1, zero_point=-1)
    b.op("CONV_2D", [x, w, bias], [y], mb.conv2d_options(padding="VALID"))
    seeds["op:CONV_2D_int8"] = b.finish([x], [y])

    seeds["op:TRANSPOSE_CONV_int8"] = transpose_conv_int8()

    b = mb.ModelBuilder()
    x = b.activation("x", [2, 3, 4], "int8", scale=0.05, zero_point=1)
    w = b.activation("w", [2, 4, 5], "int8", scale=0.04, zero_point=-2)
    y = b.activation("y", [2, 3, 5], "int8", scale=0.3, zero_point=0)
    b.op("BATCH_MATMUL", [x, w], [y], mb._opts("BatchMatMulOptions", adjX=False, adjY=False))
    seeds["op:BATCH_MATMUL_int8"] = b.finish([x, w], [y])

    for kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
        b = mb.ModelBuilder()
        x = b.activation("x", [1, 5, 4, 3], "int8", scale=0.05, zero_point=1)
        y = b.activation("y", [1, 2, 2, 3], "int8", scale=0.05, zero_point=1)
        b.op(kind, [x], [y], mb.pool_options())
        seeds[f"op:{kind}_int8"] = b.finish([x], [y])
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4, 4, 2], "float32")
    y = b.activation("y", [1, 2, 2, 2], "float32")
    b.op("L2_POOL_2D", [x], [y], mb.pool_options())
    seeds["op:L2_POOL_2D_float32"] = b.finish([x], [y])

    for kind in ("SUM", "REDUCE_MAX", "MEAN"):
        seeds[f"op:{kind}_int8"] = mm.single_op(
            kind, [1, 3, 4, 2], "int8", [np.array([1, 2], np.int32)], [[1, 1, 1, 2]], mb.reducer_options(True)
        )
    seeds["op:ARG_MAX_int8"] = mm.single_op(
        "ARG_MAX",
        [2, 5],
        "int8",
        [np.array([1], np.int32)],
        [[2]],
        mb._opts("ArgMaxOptions", outputType=mb.TYPES["int32"]),
        out_dtype="int32",
    )
    seeds["op:CUMSUM_float32"] = mm.single_op(
        "CUMSUM", [2, 5], "float32", [np.array(1, np.int32)], [[2, 5]], mb._opts("CumsumOptions")
    )

    seeds["op:CONCATENATION_int8"] = mm.single_op(
        "CONCATENATION",
        [1, 2, 3],
        "int8",
        [],
        [[1, 2, 5]],
        mb.concatenation_options(2),
        extra_inputs=[([1, 2, 2], "int8")],
    )
    seeds["op:PACK_int8"] = mm.single_op(
        "PACK", [2, 3], "int8", [], [[2, 2, 3]], mm.pack_options(2, 1), extra_inputs=[([2, 3], "int8")]
    )
    seeds["op:UNPACK_int8"] = mm.single_op("UNPACK", [2, 3], "int8", [], [[2], [2], [2]], mm.unpack_options(3, 1))
    seeds["op:SPLIT_int8"] = mm.single_op(
        "SPLIT", [2, 6], "int8", [np.array(1, np.int32)], [[2, 3], [2, 3]], mm.split_options(2), const_first=True
    )
    seeds["op:SPLIT_V_int8"] = mm.single_op(
        "SPLIT_V",
        [2, 6],
        "int8",
        [np.array([2, 4], np.int32), np.array(1, np.int32)],
        [[2, 2], [2, 4]],
        mm.split_v_options(2),
    )
    seeds["op:STRIDED_SLICE_int8"] = mm.single_op(
        "STRIDED_SLICE",
        [3, 6],
        "int8",
        [np.array([0, 1], np.int32), np.array([3, 6], np.int32), np.array([2, 2], np.int32)],
        [[2, 3]],
        mm.strided_slice_options(),
    )
    seeds["op:SLICE_int8"] = mm.single_op(
        "SLICE", [3, 6], "int8", [np.array([1, 2], np.int32), np.array([2, 3], np.int32)], [[2, 3]]
    )
    seeds["op:TRANSPOSE_int8"] = mm.single_op(
        "TRANSPOSE", [2, 3, 4], "int8", [np.array([2, 0, 1], np.int32)], [[4, 2, 3]]
    )
    seeds["op:GATHER_int8"] = mm.single_op(
        "GATHER", [4, 3], "int8", [np.array([3, 0, 1], np.int32)], [[3, 3]], mm.gather_options(0)
    )
    seeds["op:GATHER_ND_int8"] = mm.single_op("GATHER_ND", [3, 4], "int8", [np.array([[2], [0]], np.int32)], [[2, 4]])
    seeds["op:REVERSE_V2_int8"] = mm.single_op("REVERSE_V2", [3, 4], "int8", [np.array([1], np.int32)], [[3, 4]])
    seeds["op:PAD_int8"] = mm.single_op(
        "PAD", [1, 2, 3], "int8", [np.array([[0, 0], [1, 1], [0, 2]], np.int32)], [[1, 4, 5]]
    )
    seeds["op:MIRROR_PAD_float32"] = mm.single_op(
        "MIRROR_PAD",
        [1, 3, 3],
        "float32",
        [np.array([[0, 0], [1, 1], [0, 2]], np.int32)],
        [[1, 5, 5]],
        mb._opts("MirrorPadOptions", mode=0),
    )
    seeds["op:RESHAPE_int8"] = mm.single_op("RESHAPE", [2, 6], "int8", [np.array([3, 4], np.int32)], [[3, 4]])
    seeds["op:BROADCAST_TO_int8"] = mm.single_op("BROADCAST_TO", [1, 3], "int8", [np.array([2, 3], np.int32)], [[2, 3]])
    seeds["op:DEPTH_TO_SPACE_int8"] = mm.single_op(
        "DEPTH_TO_SPACE", [1, 2, 2, 8], "int8", [], [[1, 4, 4, 2]], mb._opts("DepthToSpaceOptions", blockSize=2)
    )
    seeds["op:SPACE_TO_DEPTH_int8"] = mm.single_op(
        "SPACE_TO_DEPTH", [1, 4, 4, 2], "int8", [], [[1, 2, 2, 8]], mb._opts("SpaceToDepthOptions", blockSize=2)
    )
    seeds["op:RESIZE_NEAREST_NEIGHBOR_int8"] = mm.single_op(
        "RESIZE_NEAREST_NEIGHBOR",
        [1, 2, 3, 2],
        "int8",
        [np.array([4, 5], np.int32)],
        [[1, 4, 5, 2]],
        mb._opts("ResizeNearestNeighborOptions"),
    )
    seeds["op:RESIZE_BILINEAR_int8"] = mm.single_op(
        "RESIZE_BILINEAR",
        [1, 2, 3, 2],
        "int8",
        [np.array([4, 5], np.int32)],
        [[1, 4, 5, 2]],
        mb._opts("ResizeBilinearOptions"),
    )
    seeds["op:SPACE_TO_BATCH_ND_int8"] = mm.single_op(
        "SPACE_TO_BATCH_ND",
        [1, 4, 4, 1],
        "int8",
        [np.array([2, 2], np.int32), np.zeros((2, 2), np.int32)],
        [[4, 2, 2, 1]],
    )
    seeds["op:BATCH_TO_SPACE_ND_int8"] = mm.single_op(
        "BATCH_TO_SPACE_ND",
        [4, 2, 2, 1],
        "int8",
        [np.array([2, 2], np.int32), np.zeros((2, 2), np.int32)],
        [[1, 4, 4, 1]],
    )
    q = [(0.05, -3), (0.1, 2), (0.08, 5)]
    seeds["op:SELECT_V2_int8"] = elementwise_model(
        "SELECT_V2",
        ["bool", "int8", "int8"],
        [[2, 3, 1], [4], [2, 3, 4]],
        out_dtype="int8",
        quant=[None, q[0], q[0], q[0]],
    )
    seeds["op:ADD_N_int8"] = elementwise_model("ADD_N", "int8", [[2, 3, 4]] * 3, quant=[q[0]] * 3 + [q[2]])
    seeds["op:FLOOR_DIV_float32"] = elementwise_model("FLOOR_DIV", "float32", [[2, 3, 4], [4]])
    seeds["op:LOGICAL_AND_bool"] = elementwise_model("LOGICAL_AND", "bool", [[2, 3, 4], [4]])
    seeds["op:ADD_int32"] = elementwise_model("ADD", "int32", [[2, 3, 4], [4]])
    seeds["op:SQUEEZE_int8"] = mm.single_op("SQUEEZE", [1, 3, 1, 4], "int8", [], [[3, 4]], mm.squeeze_options([0, 2]))
    seeds["op:EXPAND_DIMS_int8"] = mm.single_op("EXPAND_DIMS", [3, 4], "int8", [np.array([1], np.int32)], [[3, 1, 4]])
    seeds["op:PADV2_int8"] = mm.single_op(
        "PADV2",
        [1, 2, 3],
        "int8",
        [np.array([[0, 0], [1, 1], [0, 2]], np.int32)],
        [[1, 4, 5]],
        extra_inputs=[([], "int8")],
    )

    import flow_models
    import svdf_models

    seeds["op:SVDF_int8"] = svdf_models.single_svdf_int8()
    seeds["op:IF_int8"] = flow_models.if_int8()
    b = mb.ModelBuilder()  # while_int8 with a constant trip count (a random int32 count loops for ages)
    count = b.constant("count", np.array([3], np.int32))
    x = b.activation("x", [1, 4], "int8", scale=flow_models.SCALE, zero_point=flow_models.ZP)
    acc, i = flow_models._add_loop(b, b, count, x, 4)
    seeds["op:WHILE_int8"] = b.finish(inputs=[x], outputs=[acc, i])
    seeds["op:CALL_ONCE_int8"] = flow_models.accumulator_int8()

    import lstm_models
    import signal_models
    import signal_state_models

    seeds["op:UNIDIRECTIONAL_SEQUENCE_LSTM_int8"] = lstm_models.lstm_int8()
    seeds["op:signal_front_end"] = signal_models.front_end_model()
    seeds["op:SignalDelay_int16"] = signal_state_models.delay_model()[0]
    seeds.update(signal_seeds())
    seeds.update(detection_and_lookup_seeds())
    return seeds


def signal_seeds() -> dict[str, bytes]:
    """One model per signal operator (TFLM's custom audio front-end operators), each alone, so that
    a mutant reaches that operator's checks instead of breaking a chain; the stateful ones in a
    configuration whose first call is valid (the fuzzer runs one inference)."""
    import model_builder as mb
    import signal_models as sm
    import signal_state_models as ssm

    seeds: dict[str, bytes] = {}

    def single(name, shapes_in, shapes_out, kind, options, consts=()):
        """``kind`` on model inputs of ``shapes_in`` ((shape, dtype)) and constants ``consts``."""
        b = mb.ModelBuilder()
        xs = [b.activation(f"in{k}", shape, dtype) for k, (shape, dtype) in enumerate(shapes_in)]
        cs = [b.constant(f"c{k}", v) for k, v in enumerate(consts)]
        ys = [b.activation(f"out{k}", shape, dtype) for k, (shape, dtype) in enumerate(shapes_out)]
        b.custom_op(kind, xs + cs, ys, options)
        seeds[f"op:{name}"] = b.finish(xs, ys)
        return b

    window = np.random.default_rng(2).integers(0, 32768, 12).astype(np.int16)
    single("SignalWindow_int16", [([2, 12], "int16")], [([2, 12], "int16")], "SignalWindow", {"shift": 12}, [window])
    single(
        "SignalEnergy_int16",
        [([20], "int16")],
        [([10], "uint32")],
        "SignalEnergy",
        {"start_index": 0, "end_index": 10},  # TFLM leaves bins outside the range unwritten
    )
    b = mb.ModelBuilder()
    x = b.activation("frame", [12], "int16")
    scaled, bits = b.activation("scaled", [12], "int16"), b.activation("scale_bits", [], "int32")
    b.custom_op("SignalFftAutoScale", [x], [scaled, bits])
    seeds["op:SignalFftAutoScale_int16"] = b.finish([x], [scaled, bits])
    for dtype, n in (("int16", 16), ("float32", 8)):
        t = {"int16": ssm.INT16, "float32": ssm.FLOAT32}[dtype]
        single(f"SignalRfft_{dtype}", [([n], dtype)], [([n + 2], dtype)], "SignalRfft", {"T": t, "fft_length": n})
        single(f"SignalIrfft_{dtype}", [([n + 2], dtype)], [([n], dtype)], "SignalIrfft", {"T": t, "fft_length": n})
    channels, bins = 3, 9
    b = mb.ModelBuilder()
    x = b.activation("energy", [bins], "uint32")
    seeds["op:SignalFilterBank_uint32"] = b.finish([x], [sm.add_filter_bank(b, x, channels, bins)])
    b = mb.ModelBuilder()
    x = b.activation("bank", [channels], "uint64")
    seeds["op:SignalFilterBankSquareRoot_uint64"] = b.finish([x], [sm.add_square_root(b, x, channels)])
    b = mb.ModelBuilder()
    x = b.activation("bank", [channels], "uint32")
    seeds["op:SignalFilterBankLog_uint32"] = b.finish([x], [sm.add_log(b, x, channels)])
    b = mb.ModelBuilder()
    x, noise = b.activation("bank", [channels], "uint32"), b.activation("noise", [channels], "uint32")
    seeds["op:SignalPCAN_uint32"] = b.finish([x, noise], [sm.add_pcan(b, x, noise, channels)])
    seeds["op:SignalFramer_int16"] = ssm.framer_model(((1, 1, 10, 4, True),))[0]
    seeds["op:SignalStacker_int16"] = ssm.stacker_model(((3, 0, 0, 1),))[0]
    seeds["op:SignalOverlapAdd_int16"] = ssm.overlap_add_model((("int16", [2, 8], 4),))[0]
    seeds["op:SignalOverlapAdd_float32"] = ssm.overlap_add_model((("float32", [3, 6], 2),))[0]
    seeds["op:SignalFilterBankSpectralSubtraction_uint32"] = ssm.spectral_subtraction_model(((4, {}),))[0]
    return seeds


def detection_and_lookup_seeds() -> dict[str, bytes]:
    """TFLite_Detection_PostProcess (fast and regular NMS), CAST, FILL and EMBEDDING_LOOKUP."""
    import model_builder as mb
    import test_op_cast
    from test_op_detection_postprocess import options, ssd_model

    seeds: dict[str, bytes] = {}
    for name, regular in (("fast", False), ("regular", True)):
        seeds[f"op:TFLite_Detection_PostProcess_{name}"] = ssd_model(
            boxes=6, num_classes=2, opts=options(max_detections=3, num_classes=2, regular=regular)
        )
    seeds["op:CAST_int16"] = test_op_cast.cast_model("int16", ["float32", "int8", "uint32"], [2, 3])
    seeds["op:CAST_float32"] = test_op_cast.cast_model("float32", ["int32", "int16", "bool"], [2, 3])
    for dtype in ("int8", "float32"):
        b = mb.ModelBuilder()
        dims = b.constant("dims", np.array([2, 3], np.int32))
        quant = {"scale": 0.05, "zero_point": -3} if dtype == "int8" else {}
        v = b.activation("value", [], dtype, **quant)
        y = b.activation("y", [2, 3], dtype, **quant)
        b.op("FILL", [dims, v], [y])
        seeds[f"op:FILL_{dtype}"] = b.finish([v], [y])
    for dtype in ("float32", "int8"):
        b = mb.ModelBuilder()  # run-time table, constant ids (random run-time ids are out of range)
        quant = {"scale": 0.02, "zero_point": 1} if dtype == "int8" else {}
        ids = b.constant("ids", np.array([3, 0, 3], np.int32))
        table = b.activation("table", [4, 2, 3], dtype, **quant)
        y = b.activation("rows", [3, 2, 3], dtype, **quant)
        b.op("EMBEDDING_LOOKUP", [ids, table], [y])
        seeds[f"op:EMBEDDING_LOOKUP_{dtype}"] = b.finish([table], [y])
    return seeds
