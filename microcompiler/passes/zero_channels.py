"""Drop all-zero output channels from int8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (pruned or
batch-norm-folded models): fewer weights in flash and fewer multiply-accumulates.

An output channel whose weights are all zero accumulates nothing but its bias, so for every pixel it
is the same constant, the value TFLite Micro computes for that row:
``clamp(requantize(bias, multiplier, shift) + output_zero_point, activation_min, activation_max)``.

The pass rewrites such an operator into two:

1. the operator itself on the non-zero channels only (weights, bias and per-channel scales sliced),
   writing a narrower tensor ``<output>;nonzero_channels`` that shares the output's memory
   (an alias, so it costs no RAM), with the note ``dropped_channels`` (counted in metadata.json);
2. ``MC_CONSTANT_CHANNELS`` (ops/constant_channels.py), which spreads the computed channels to their
   places in the full output, last pixel first (in place), and writes the constants between them.

A DEPTHWISE_CONV_2D keeps its whole input: its remaining output channels get the note
``input_channels`` (``Operator.notes``, not an option), the input channel each reads (output channel // depth multiplier before the
pass), which its kernels follow (the planes kernel, one channel at a time, or the reference loops).

It runs after ``remove_reshapes`` and before ``remove_dead_code`` (which then drops the full
weights) and ``plan_memory``. Operators with all or no channels zero, int4 or asymmetric weights,
grouped convolutions or non-constant weights are left alone.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from microcompiler.ir import Graph, Operator, OperatorNotes, Quantization, Tensor
from microcompiler.ops.constant_channels import CONSTANT_CHANNELS
from microcompiler.ops.fixedpoint import requantize
from microcompiler.ops.quant import activation_range, conv_multipliers, fully_connected_multipliers

CHANNEL_AXIS = {"CONV_2D": 0, "FULLY_CONNECTED": 0, "DEPTHWISE_CONV_2D": 3}  # the weights' output channel axis


def _multipliers(op: Operator, graph: Graph, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """The (multiplier, shift) per output channel the operator's kernel uses."""
    x, w, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
    if op.kind == "FULLY_CONNECTED":
        mult, shift = fully_connected_multipliers(x, w, y)
        if len(mult) == 1:
            mult, shift = np.repeat(mult, channels), np.repeat(shift, channels)
        return mult, shift
    return conv_multipliers(x, w, y, channels)


def _bias(op: Operator, graph: Graph) -> Tensor | None:
    return graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None


def zero_channels(op: Operator, graph: Graph) -> np.ndarray | None:
    """A boolean mask of the operator's all-zero output channels, or None when the pass leaves the
    operator alone (not eligible, or no channel or every channel zero)."""
    if op.kind not in CHANNEL_AXIS or len(op.outputs) != 1 or len(op.inputs) > 3:
        return None
    axis = CHANNEL_AXIS[op.kind]
    x, w, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
    bias = _bias(op, graph)
    if (x.dtype, w.dtype, y.dtype) != ("int8", "int8", "int8") or not w.is_constant or w.quant is None:
        return None
    if bias is not None and (not bias.is_constant or bias.dtype != "int32"):
        return None
    if any(w.quant.zero_point) or (w.quant.per_channel and w.quant.axis != axis):
        return None
    if y.quant is None or y.quant.per_channel or y.persistent or op.outputs[0] in graph.aliases:
        return None
    if op.notes.input_channels is not None:  # a depthwise layer this pass made already
        return None
    if y.shape[-1] != w.shape[axis]:
        return None
    if op.kind == "CONV_2D" and x.shape[3] != w.shape[3]:  # grouped convolution
        return None
    zero = ~np.any(np.moveaxis(w.data, axis, 0).reshape(w.shape[axis], -1) != 0, axis=1)
    return zero if 0 < int(zero.sum()) < len(zero) else None


def channel_constants(op: Operator, graph: Graph) -> np.ndarray:
    """int8 per output channel: the value a channel with all-zero weights has at every pixel."""
    y = graph.tensors[op.outputs[0]]
    channels = y.shape[-1]
    mult, shift = _multipliers(op, graph, channels)
    bias = _bias(op, graph)
    acc = bias.data.astype(np.int64) if bias is not None else np.zeros(channels, np.int64)
    lo, hi = activation_range(op.options["activation"], y)
    zp = y.quant.zero_point[0]
    return np.array(
        [min(max(requantize(int(acc[c]), int(mult[c]), int(shift[c])) + zp, lo), hi) for c in range(channels)], np.int8
    )


def _sliced(t: Tensor, keep: np.ndarray, axis: int) -> Tensor:
    quant = t.quant
    if quant is not None and quant.per_channel:
        quant = Quantization(
            [s for s, k in zip(quant.scale, keep) if k], [z for z, k in zip(quant.zero_point, keep) if k], quant.axis
        )
    data = np.compress(keep, t.data, axis=axis)
    return Tensor(f"{t.name};nonzero_channels", data.shape, t.dtype, quant, data)


def drop_zero_channels(graph: Graph) -> Graph:
    g = graph.copy()
    next_index = max((op.index for op in g.operators), default=-1) + 1
    operators = []
    for op in g.operators:
        zero = zero_channels(op, g)
        if zero is None:
            operators.append(op)
            continue
        keep = ~zero
        out = op.outputs[0]
        y = g.tensors[out]

        def add(t: Tensor) -> int:
            g.tensors.append(t)
            return len(g.tensors) - 1

        inputs = list(op.inputs)
        inputs[1] = add(_sliced(g.tensors[op.inputs[1]], keep, CHANNEL_AXIS[op.kind]))
        if _bias(op, g) is not None:
            inputs[2] = add(_sliced(g.tensors[op.inputs[2]], keep, 0))
        narrow = add(Tensor(f"{y.name};nonzero_channels", (*y.shape[:-1], int(keep.sum())), y.dtype, y.quant))
        g.aliases[narrow] = out
        index_type = "int8" if keep.sum() <= 128 else "int16"  # packed channel 0..kept-1, or -1
        source = np.where(keep, np.cumsum(keep) - 1, -1).astype(index_type)
        sources = add(Tensor(f"{y.name};source_channel", source.shape, index_type, None, source))
        constants = add(
            Tensor(
                f"{y.name};constant_value",
                source.shape,
                "int8",
                None,
                np.where(keep, 0, channel_constants(op, g)).astype(np.int8),
            )
        )
        notes = replace(op.notes, dropped_channels=int(zero.sum()))
        if op.kind == "DEPTHWISE_CONV_2D":  # the input channel each remaining output channel reads
            channels = np.flatnonzero(keep) // op.options.get("depth_multiplier", 1)
            notes = replace(notes, input_channels=tuple(int(c) for c in channels))
        operators.append(replace(op, inputs=inputs, outputs=[narrow], options=dict(op.options), notes=notes))
        operators.append(
            Operator(
                CONSTANT_CHANNELS,
                [narrow, sources, constants],
                [out],
                {},
                next_index,
                notes=OperatorNotes(layer_suffix="constant_channels"),
            )
        )
        next_index += 1
    g.operators = operators
    return g
