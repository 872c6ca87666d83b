"""STRIDED_SLICE: int8, int16, int32, float32 and bool (TFLM's types); constant begin, end, strides.

Every mask is honoured: begin_mask, end_mask, shrink_axis_mask, negative strides and negative
indices exactly as TFLM computes them (TFLM's ``StartForAxis``/``EndForAxis``: indices wrap once,
then clamp). TFLM ignores ``ellipsis_mask``, ``new_axis_mask`` and ``offset``: a model whose output
shape fits that reading is compiled as TFLM runs it. A model whose output shape only fits the full
TensorFlow Lite meaning of those options (an ellipsis expanding over several dimensions, new
dimensions of extent 1, ``end = begin + end`` with ``offset``) is refused, as TFLM's prepare step
refuses it; ``tensorflow_plan`` recognises it so that the error says so. The values are copied
unchanged, contiguous runs with memcpy.
"""

from __future__ import annotations

from dataclasses import dataclass

from microcompiler.ops.base import register, require
from microcompiler.ops.movement_common import CopyKernel, constant_ints, contiguous_copy, row_strides


@dataclass
class _Axis:
    begin: int
    end: int
    stride: int
    begin_mask: bool
    end_mask: bool
    shrink: bool


@dataclass
class SlicePlan:
    starts: list[int]  # per input dimension
    counts: list[int]  # elements taken per input dimension (1 for a shrunk one)
    strides: list[int]
    out_shape: list[int]
    problem: str = ""  # why TFLM cannot run this plan ("" when it can)


def _clamp(v, lo, hi):
    return max(lo, min(hi, v))


def _axis_plan(a: _Axis, n: int, offset: bool) -> tuple[int, int, str]:
    """(start, count, problem) of one input dimension of extent n."""
    s = a.stride
    start = a.begin + n if a.begin < 0 else a.begin
    start = _clamp(start, 0, n) if s > 0 else _clamp(start, -1, n - 1)
    if a.begin_mask:
        start = 0 if s > 0 else n - 1
    if a.shrink:
        if s < 0:
            return start, 1, "shrinking an axis with a negative stride (TFLM writes nothing)"
        if not 0 <= start < n:
            return start, 1, f"shrink index {a.begin} is out of range for extent {n}"
        return start, 1, ""
    end = a.end + start if offset else a.end
    end = end + n if end < 0 else end
    end = _clamp(end, 0, n) if s > 0 else _clamp(end, -1, n - 1)
    if a.end_mask:
        end = n if s > 0 else -1
    count = max(0, -(-(end - start) // s))
    return start, count, ""


def tflm_plan(shape, begin, end, strides, opts) -> SlicePlan | None:
    """The slice as TFLM computes it (ellipsis_mask, new_axis_mask and offset ignored)."""
    if not (len(begin) == len(end) == len(strides) == len(shape)):
        return None
    plan = SlicePlan([], [], list(strides), [])
    for k, n in enumerate(shape):
        bit = 1 << k
        a = _Axis(
            begin[k],
            end[k],
            strides[k],
            bool(opts.get("begin_mask", 0) & bit),
            bool(opts.get("end_mask", 0) & bit),
            bool(opts.get("shrink_axis_mask", 0) & bit),
        )
        start, count, problem = _axis_plan(a, n, False)
        plan.starts.append(start)
        plan.counts.append(count)
        plan.problem = plan.problem or problem
        if not a.shrink:
            plan.out_shape.append(count)
    return plan


def tensorflow_plan(shape, begin, end, strides, opts) -> SlicePlan | None:
    """The slice with TensorFlow Lite's full meaning of ellipsis_mask, new_axis_mask and offset."""
    n_specs, rank = len(begin), len(shape)
    ellipsis, new_axis = opts.get("ellipsis_mask", 0), opts.get("new_axis_mask", 0)
    ellipsis &= (1 << n_specs) - 1
    if ellipsis & (ellipsis - 1):
        return None  # TensorFlow allows one ellipsis only
    if not ellipsis:
        ellipsis = 1 << n_specs  # an implicit ellipsis after the last spec
        n_specs += 1
    first = ellipsis.bit_length() - 1
    new_after = sum(1 for i in range(first + 1, n_specs) if new_axis & (1 << i))
    dense: list[_Axis | None] = [None] * rank
    final: list[int | str] = []  # per output dimension: dense index, "new"; shrunk dims are left out
    full = 0
    for i in range(n_specs):
        bit = 1 << i
        if ellipsis & bit:
            stop = min(rank - (n_specs - i) + 1 + new_after, rank)
            while full < stop:
                dense[full] = _Axis(0, 0, 1, True, True, False)
                final.append(full)
                full += 1
        elif new_axis & bit:
            final.append("new")
        else:
            if full >= rank:
                return None
            a = _Axis(
                begin[i],
                end[i],
                strides[i],
                bool(opts.get("begin_mask", 0) & bit),
                bool(opts.get("end_mask", 0) & bit),
                bool(opts.get("shrink_axis_mask", 0) & bit),
            )
            dense[full] = a
            if not a.shrink:
                final.append(full)
            full += 1
    if full != rank or any(a is None for a in dense):
        return None
    plan = SlicePlan([], [], [a.stride for a in dense], [])
    for a, n in zip(dense, shape):
        start, count, problem = _axis_plan(a, n, bool(opts.get("offset", False)))
        plan.starts.append(start)
        plan.counts.append(count)
        plan.problem = plan.problem or problem
    plan.out_shape = [plan.counts[f] if isinstance(f, int) else 1 for f in final]  # 1: a "new" dimension
    return plan


@register
class StridedSlice(CopyKernel):
    kinds = ("STRIDED_SLICE",)
    input_roles = ("input", "begin", "end", "strides")
    inputs = (4, 4)
    types = ("int8", "int16", "int32", "float32", "bool")
    options = (
        "constant int32 begin/end/strides, 1-D to 4-D inputs (as TFLM); begin_mask, end_mask, "
        "shrink_axis_mask, negative strides and indices; ellipsis_mask, new_axis_mask, offset: ignored as by TFLM"
    )
    tflm_refusals = (
        "begin/end/strides of another type than int32, or an input of more than 4 dimensions",
        "an output shape that only TensorFlow's meaning of ellipsis_mask, new_axis_mask or offset gives "
        "(CheckOutputSize)",
    )

    def slice_plan(self, op, graph) -> SlicePlan:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        # TFLM's StridedSlicePrepare reads begin/end/strides as int32 (an int64 tensor's words are other
        # indices) and slices inputs of at most 4 dimensions ("input dim should not exceed 4")
        begin = constant_ints(graph, op, 1, "begin", dtypes=("int32",))
        end = constant_ints(graph, op, 2, "end", dtypes=("int32",))
        strides = constant_ints(graph, op, 3, "strides", dtypes=("int32",))
        require(
            len(x.shape) <= 4, op, f"a {len(x.shape)}-D input is not supported (TFLM: input dim should not exceed 4)"
        )
        require(
            len(begin) == len(end) == len(strides),
            op,
            f"begin {begin}, end {end} and strides {strides} differ in length",
        )
        require(0 not in strides, op, f"strides {strides} contain 0")
        require(len(x.shape) >= 1, op, "the input must have at least one dimension")
        plan = tflm_plan(x.shape, begin, end, strides, op.options)
        if plan is None or plan.out_shape != list(y.shape):
            full = tensorflow_plan(x.shape, begin, end, strides, op.options)
            require(
                full is None or full.out_shape != list(y.shape),
                op,
                f"output shape {list(y.shape)} is the slice of {list(x.shape)} with TensorFlow's meaning of "
                "ellipsis_mask, new_axis_mask or offset, which TFLM ignores: its prepare step refuses the model "
                "(CheckOutputSize), so no reference confirms an answer",
            )
            require(
                False,
                op,
                f"output shape {list(y.shape)} does not match the slice of {list(x.shape)} "
                f"(begin {begin}, end {end}, strides {strides}: {plan.out_shape if plan else None})",
            )
        assert plan is not None  # the require above raised otherwise
        require(not plan.problem, op, plan.problem)
        return plan

    def plan(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        p = self.slice_plan(op, graph)
        in_strides = row_strides(x.shape)
        base = sum(st * s for st, s in zip(p.starts, in_strides))
        return [
            contiguous_copy(
                f"t{op.inputs[0]}", f"t{op.outputs[0]}", p.counts, [s * k for s, k in zip(p.strides, in_strides)], base
            )
        ]
