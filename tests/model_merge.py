"""Merge single-operator test models into one model that runs them side by side, so that a sweep
compiles and builds once instead of once per case while every case keeps its own inputs and outputs
(each output is still compared with TFLM on its own)."""

from __future__ import annotations

import re

import flatbuffers
from harness import assert_matches_oracle
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb


def merge_models(models: list[bytes]) -> bytes:
    """One model whose inputs and outputs are those of ``models`` in order (each one subgraph)."""
    merged = fb.ModelT()
    merged.version = 3
    merged.buffers = [fb.BufferT()]
    merged.operatorCodes = []
    sub = fb.SubGraphT()
    sub.tensors, sub.operators, sub.inputs, sub.outputs = [], [], [], []
    codes: dict[tuple, int] = {}  # (builtin code, custom name) -> merged opcode index
    for data in models:
        m = fb.ModelT.InitFromPackedBuf(data, 0)
        (g,) = m.subgraphs
        buffer_base = len(merged.buffers) - 1  # buffer 0 stays the shared empty buffer
        merged.buffers.extend(m.buffers[1:])
        tensor_base = len(sub.tensors)
        for t in g.tensors:
            if t.buffer:
                t.buffer += buffer_base
            sub.tensors.append(t)
        for o in g.operators:
            opcode = m.operatorCodes[o.opcodeIndex]
            code = (opcode.builtinCode, opcode.customCode)
            if code not in codes:
                codes[code] = len(merged.operatorCodes)
                merged.operatorCodes.append(m.operatorCodes[o.opcodeIndex])
            o.opcodeIndex = codes[code]
            o.inputs = [i + tensor_base if i >= 0 else i for i in o.inputs]
            o.outputs = [i + tensor_base for i in o.outputs]
            sub.operators.append(o)
        sub.inputs.extend(i + tensor_base for i in g.inputs)
        sub.outputs.extend(i + tensor_base for i in g.outputs)
    merged.subgraphs = [sub]
    builder = flatbuffers.Builder(1024)
    builder.Finish(merged.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def assert_cases_match_oracle(cases: dict[str, bytes], tmp_path, **kwargs):
    """Run every single-output model in ``cases`` (id -> model) as one merged model against TFLM;
    a mismatch names the case."""
    names = list(cases)
    try:
        return assert_matches_oracle(merge_models([cases[n] for n in names]), tmp_path, **kwargs)
    except AssertionError as e:
        found = re.search(r"output (\d+)\b", str(e))
        if found and int(found.group(1)) < len(names):
            raise AssertionError(f"case {names[int(found.group(1))]}: {e}") from None
        raise
