"""Put several small models side by side in one (each keeps its own inputs, operators and outputs), so
that a sweep of single-operator cases compiles and runs once instead of once per case."""
from __future__ import annotations

import flatbuffers
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb


def merge_models(models: list[bytes]) -> bytes:
    merged = fb.ModelT()
    merged.version = 3
    merged.buffers = [fb.BufferT()]
    merged.operatorCodes = []
    sub = fb.SubGraphT()
    sub.tensors, sub.operators, sub.inputs, sub.outputs = [], [], [], []
    codes: dict[tuple[int, int], int] = {}
    for model_bytes in models:
        model = fb.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)
        (part,) = model.subgraphs
        tensor_base, buffer_base = len(sub.tensors), len(merged.buffers) - 1
        merged.buffers += model.buffers[1:]
        for t in part.tensors:
            t.buffer = t.buffer + buffer_base if t.buffer else 0
            sub.tensors.append(t)
        for op in part.operators:
            code = model.operatorCodes[op.opcodeIndex]
            key = (code.builtinCode, code.version)
            if key not in codes:
                codes[key] = len(merged.operatorCodes)
                merged.operatorCodes.append(code)
            op.opcodeIndex = codes[key]
            op.inputs = [i + tensor_base if i >= 0 else i for i in op.inputs]
            op.outputs = [o + tensor_base for o in op.outputs]
            sub.operators.append(op)
        sub.inputs += [i + tensor_base for i in part.inputs]
        sub.outputs += [o + tensor_base for o in part.outputs]
    merged.subgraphs = [sub]
    builder = flatbuffers.Builder(1024)
    builder.Finish(merged.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
