"""Build small .tflite models in tests, without TensorFlow.

Uses the flatbuffer object API that ships with the oracle package (tflite-micro). Example::

    b = ModelBuilder()
    x = b.activation("x", [1, 8, 8, 3], "int8", scale=0.05, zero_point=-3)
    w = b.constant("w", weights_int8, scale=[0.01] * 4, zero_point=[0] * 4, axis=0)
    bias = b.constant("b", bias_int32, scale=[0.0005] * 4, zero_point=[0] * 4)
    y = b.activation("y", [1, 8, 8, 4], "int8", scale=0.1, zero_point=2)
    b.op("CONV_2D", [x, w, bias], [y], Conv2DOptions(padding="SAME", stride_w=1, stride_h=1))
    model_bytes = b.finish(inputs=[x], outputs=[y])
"""

from __future__ import annotations

import flatbuffers
import numpy as np
from flatbuffers import flexbuffers
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

TYPES = {
    "float32": fb.TensorType.FLOAT32,
    "int32": fb.TensorType.INT32,
    "int8": fb.TensorType.INT8,
    "int16": fb.TensorType.INT16,
    "int64": fb.TensorType.INT64,
    "uint8": fb.TensorType.UINT8,
    "uint32": fb.TensorType.UINT32,
    "uint64": fb.TensorType.UINT64,
    "bool": fb.TensorType.BOOL,
    "resource": fb.TensorType.RESOURCE,
}
ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}
PADDINGS = {"SAME": 0, "VALID": 1}


class ModelBuilder:
    """Builds subgraph 0 (the main graph); ``subgraph(name)`` adds another subgraph (the branch,
    loop or initialisation subgraph of IF, WHILE or CALL_ONCE), built with the same methods and
    sharing the model's buffers and opcodes. Its ``index`` is what control-flow options refer to."""

    def __init__(self, parent: ModelBuilder | None = None, name: str = "main"):
        self.buffers = parent.buffers if parent else [fb.BufferT()]  # buffer 0: the empty buffer
        self.opcodes: list = parent.opcodes if parent else []  # builtin codes, or custom operator names (str)
        self.tensors: list = []
        self.operators: list = []
        self.name = name
        self.children: list[ModelBuilder] = []
        self.index = 0
        self.io: tuple[list[int], list[int]] = ([], [])
        if parent is not None:
            parent.children.append(self)
            self.index = len(parent.children)

    def subgraph(self, name: str) -> ModelBuilder:
        """A new subgraph of this model (call on the main builder); set its I/O with ``set_io``."""
        return ModelBuilder(self, name)

    def set_io(self, inputs, outputs) -> None:
        self.io = (list(inputs), list(outputs))

    def _subgraph_t(self, inputs, outputs):
        sub = fb.SubGraphT()
        sub.tensors, sub.operators = self.tensors, self.operators
        sub.inputs, sub.outputs = list(inputs), list(outputs)
        sub.name = self.name
        return sub

    def _tensor(self, name, shape, dtype, scale, zero_point, axis, buffer):
        t = fb.TensorT()
        t.name = name
        t.shape = list(shape)
        t.type = TYPES[dtype]
        t.buffer = buffer
        if scale is not None:
            q = fb.QuantizationParametersT()
            q.scale = [float(s) for s in np.atleast_1d(scale)]
            q.zeroPoint = [int(z) for z in np.atleast_1d(zero_point if zero_point is not None else 0)]
            q.quantizedDimension = axis
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def activation(self, name, shape, dtype, scale=None, zero_point=None, axis=0) -> int:
        return self._tensor(name, shape, dtype, scale, zero_point, axis, 0)

    def variable(self, name, shape, dtype, scale=None, zero_point=None, data: np.ndarray | None = None) -> int:
        """A variable tensor (state kept across inferences, e.g. SVDF's activation state), with an
        initial value when ``data`` is given (else the runtime's zeros)."""
        buffer = 0
        if data is not None:
            buf = fb.BufferT()
            buf.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8).tolist()
            self.buffers.append(buf)
            buffer = len(self.buffers) - 1
        index = self._tensor(name, shape, dtype, scale, zero_point, 0, buffer)
        self.tensors[index].isVariable = True
        return index

    def constant(self, name, data: np.ndarray, dtype=None, scale=None, zero_point=None, axis=0) -> int:
        data = np.ascontiguousarray(data)
        dtype = dtype or str(data.dtype)
        buf = fb.BufferT()
        buf.data = np.frombuffer(data.tobytes(), dtype=np.uint8).tolist() or None
        self.buffers.append(buf)
        return self._tensor(name, data.shape, dtype, scale, zero_point, axis, len(self.buffers) - 1)

    def op(self, kind: str, inputs, outputs, options=None):
        code = getattr(fb.BuiltinOperator, kind)
        self._add_operator(code, inputs, outputs)
        if options is not None:
            self.operators[-1].builtinOptionsType, self.operators[-1].builtinOptions = options

    def custom_op(self, name: str, inputs, outputs, options: dict | bytes | None = None):
        """A CUSTOM operator ``name`` (e.g. "SignalWindow") whose options are a flexbuffer map
        (``options`` a dict), raw bytes (to write malformed options), or absent."""
        self._add_operator(name, inputs, outputs)
        if isinstance(options, dict):
            options = bytes(flexbuffers.Dumps(options))
        if options is not None:
            self.operators[-1].customOptions = list(options)
            self.operators[-1].customOptionsFormat = fb.CustomOptionsFormat.FLEXBUFFERS

    def _add_operator(self, code, inputs, outputs):
        if code not in self.opcodes:
            self.opcodes.append(code)
        o = fb.OperatorT()
        o.opcodeIndex = self.opcodes.index(code)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        self.operators.append(o)

    def finish(self, inputs, outputs) -> bytes:
        model = fb.ModelT()
        model.version = 3
        model.subgraphs = [self._subgraph_t(inputs, outputs)] + [c._subgraph_t(*c.io) for c in self.children]
        model.buffers = self.buffers
        codes = []
        for c in self.opcodes:
            oc = fb.OperatorCodeT()
            if isinstance(c, str):
                c, oc.customCode = fb.BuiltinOperator.CUSTOM, c
            oc.builtinCode = c
            oc.deprecatedBuiltinCode = min(c, 127)
            oc.version = 1
            codes.append(oc)
        model.operatorCodes = codes
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


# ---- builtin options: each returns (options type, options object) for ModelBuilder.op ----------


def _opts(type_name, **fields):
    cls = getattr(fb, type_name + "T")
    o = cls()
    for k, v in fields.items():
        setattr(o, k, v)
    return getattr(fb.BuiltinOptions, type_name), o


def conv2d_options(padding="SAME", stride=(1, 1), dilation=(1, 1), activation="NONE"):
    return _opts(
        "Conv2DOptions",
        padding=PADDINGS[padding],
        strideH=stride[0],
        strideW=stride[1],
        dilationHFactor=dilation[0],
        dilationWFactor=dilation[1],
        fusedActivationFunction=ACTIVATIONS[activation],
    )


def depthwise_options(padding="SAME", stride=(1, 1), dilation=(1, 1), depth_multiplier=1, activation="NONE"):
    return _opts(
        "DepthwiseConv2DOptions",
        padding=PADDINGS[padding],
        strideH=stride[0],
        strideW=stride[1],
        dilationHFactor=dilation[0],
        dilationWFactor=dilation[1],
        depthMultiplier=depth_multiplier,
        fusedActivationFunction=ACTIVATIONS[activation],
    )


def fully_connected_options(activation="NONE", keep_num_dims=False):
    return _opts("FullyConnectedOptions", fusedActivationFunction=ACTIVATIONS[activation], keepNumDims=keep_num_dims)


def pool_options(filter_hw=(2, 2), stride=(2, 2), padding="VALID", activation="NONE"):
    return _opts(
        "Pool2DOptions",
        padding=PADDINGS[padding],
        strideH=stride[0],
        strideW=stride[1],
        filterHeight=filter_hw[0],
        filterWidth=filter_hw[1],
        fusedActivationFunction=ACTIVATIONS[activation],
    )


def add_options(activation="NONE", pot_scale_int16=False):
    return _opts("AddOptions", fusedActivationFunction=ACTIVATIONS[activation], potScaleInt16=pot_scale_int16)


def mul_options(activation="NONE"):
    return _opts("MulOptions", fusedActivationFunction=ACTIVATIONS[activation])


def softmax_options(beta=1.0):
    return _opts("SoftmaxOptions", beta=beta)


def concatenation_options(axis, activation="NONE"):
    return _opts("ConcatenationOptions", axis=axis, fusedActivationFunction=ACTIVATIONS[activation])


def reducer_options(keep_dims=True):
    return _opts("ReducerOptions", keepDims=keep_dims)


def reshape_options(new_shape):
    return _opts("ReshapeOptions", newShape=list(new_shape))


def svdf_options(rank, activation="NONE"):
    return _opts("SVDFOptions", rank=rank, fusedActivationFunction=ACTIVATIONS[activation])


def var_handle_options(shared_name, container=""):
    return _opts("VarHandleOptions", container=container, sharedName=shared_name)


def call_once_options(init_subgraph):
    return _opts("CallOnceOptions", initSubgraphIndex=init_subgraph)


def if_options(then_subgraph, else_subgraph):
    return _opts("IfOptions", thenSubgraphIndex=then_subgraph, elseSubgraphIndex=else_subgraph)


def while_options(cond_subgraph, body_subgraph):
    return _opts("WhileOptions", condSubgraphIndex=cond_subgraph, bodySubgraphIndex=body_subgraph)


def lstm_options(activation="TANH", cell_clip=0.0, time_major=False):
    return _opts(
        "UnidirectionalSequenceLSTMOptions",
        fusedActivationFunction=ACTIVATIONS[activation],
        cellClip=cell_clip,
        projClip=0.0,
        timeMajor=time_major,
        asymmetricQuantizeInputs=False,
    )
