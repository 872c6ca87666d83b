"""RESHAPE, SQUEEZE and EXPAND_DIMS as a copy.

These change only the shape, never the bytes. The ``remove_reshapes`` pass turns almost every one
of them into a zero-copy alias. It keeps one only
when both sides are separate memory that already exists (a model input, or a constant in flash,
reshaped straight into a model output); this kernel copies the bytes across for that case.
"""

from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require, require_consistent


@register
class Reshape(OpKernel):
    kinds = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
    input_roles = ("input", "shape")
    inputs = (1, 2)
    arity = {"SQUEEZE": ((1, 1), (1, 1)), "EXPAND_DIMS": ((2, 2), (1, 1))}
    types = ("int8", "int16", "int32", "int64", "float32", "bool")
    type_notes = "TFLM runs EXPAND_DIMS for int8, int16 and float32 only"
    kind_refusals = {
        "SQUEEZE": ("an input of more than 8 dimensions, or an output that does not keep the unsqueezed dimensions",),
        "EXPAND_DIMS": (
            'an axis that is not a constant ("Non-constant >axis< tensor is not supported"), not int32, or in '
            'a tensor of more than one dimension ("Axis has only one element for Expand_Dims")',
        ),
    }
    options = "no code: an alias in the arena (a copy only between two caller-owned buffers)"
    _KIND_OPTIONS = {
        "SQUEEZE": "squeeze_dims (negative allowed; none: every extent-1 dimension); ",
        "EXPAND_DIMS": "constant axis (negative allowed); ",
    }

    def describe(self, kind):
        d = super().describe(kind)
        d["options"] = self._KIND_OPTIONS.get(kind, "") + self.options
        d["type_notes"] = self.type_notes if kind == "EXPAND_DIMS" else ""
        return d

    def check(self, op, graph):
        require(
            1 <= len(op.inputs) <= 2 and op.inputs[0] >= 0 and len(op.outputs) == 1,
            op,
            "expects an input, an optional shape (or axis) tensor and one output",
        )
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(x.dtype == y.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        require(
            x.size == y.size,
            op,
            f"cannot reshape {list(x.shape)} ({x.size} elements) into {list(y.shape)} ({y.size} elements)",
        )
        if op.kind == "SQUEEZE":
            self._check_squeeze(op, x, y)
        elif op.kind == "EXPAND_DIMS":
            require(len(op.inputs) == 2, op, "expects an input and an axis tensor (TFLM requires both)")
            axis_t = graph.tensors[op.inputs[1]]
            require(axis_t.is_constant, op, "an axis computed at run time is not supported (TFLM requires a constant)")
            require(axis_t.dtype == "int32", op, f"the axis must be int32 (as in TFLM), not {axis_t.dtype}")
            require_consistent(
                len(axis_t.shape) <= 1 and axis_t.size == 1,
                op,
                f"the axis tensor has shape {list(axis_t.shape)}; TFLM requires one value in at most one dimension",
            )
            rank = len(x.shape)
            axis = int(axis_t.data.reshape(-1)[0])
            require(-rank - 1 <= axis <= rank, op, f"axis {axis} is out of range for rank {rank}")
            expected = list(x.shape)
            expected.insert(axis % (rank + 1), 1)
            require(
                list(y.shape) == expected, op, f"output shape {list(y.shape)} does not match the expected {expected}"
            )

    @staticmethod
    def _check_squeeze(op, x, y) -> None:
        """TFLM's SqueezePrepare: at most 8 input dimensions, each squeeze_dims entry names one of
        extent 1, and the output keeps every other dimension in order (the sizes agree already)."""
        rank = len(x.shape)
        require(rank <= 8, op, f"a {rank}-D input is not supported (TFLM squeezes up to 8-D inputs)")
        squeeze = [False] * rank
        dims = op.options.get("squeeze_dims") or []
        for d in dims:
            require(
                -rank <= d < rank and x.shape[d % rank] == 1,
                op,
                f"squeeze_dims {d} is out of range for {list(x.shape)} or names a dimension of extent other than 1",
            )
            squeeze[d % rank] = True
        if not dims:
            squeeze = [n == 1 for n in x.shape]
        kept = [n for n, s in zip(x.shape, squeeze) if not s]
        require_consistent(
            len(y.shape) >= len(kept) and all(o >= i for o, i in zip(y.shape, kept)),
            op,
            f"output shape {list(y.shape)} does not hold the dimensions {kept} left after squeezing "
            f"{list(x.shape)} (TFLM refuses it too)",
        )

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        return ctx.render("reshape.c.j2", input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]), nbytes=x.nbytes)
