"""SVDF: int8 (int16 or int8 activation state) and float32, bit-exact with TFLite Micro's reference
kernels (svdf_common.cc).

The activation state (input 4) is a persistent tensor ``[batch, num_filters * memory_size]``: each
filter keeps its last ``memory_size`` feature activations, oldest first. One inference

1. shifts the whole state one element to the left (the oldest activation of each filter drops out),
2. writes each filter's new activation ``weights_feature . input`` into its newest slot (int8:
   requantized by input_scale * feature_scale / state_scale, saturated to the state type, plus the
   state zero point, wrapping around in the state type: the pinned TFLM adds the zero point after
   the clamp),
3. sums, per unit, ``rank`` filters' ``weights_time . memory`` and the bias, and requantizes by
   state_scale * time_scale / output_scale (int8; as in TFLM the fused activation is not applied) or
   applies the fused activation (float32).

The state is updated in place in its static array (docs/state.md).

With the DSP extension an int8 SVDF (int16 or int8 state, any zero points) runs the ``rows4`` fast
kernel (ops/fast/svdf_rows4.py: FULLY_CONNECTED's 4-rows SMLAD loop for the feature matmul, one SMLAD
dot product per unit for the time weights, zero points folded into start values), on Helium cores
``mve-rows4`` (the feature matmul on VMLADAVA.S8); elsewhere, and for float32, the reference loops of
svdf.c.j2.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require, require_consistent
from microcompiler.ops.fast.svdf_rows4 import MVE_ROWS4, ROWS4, emit_svdf_rows4, mve_scratch_bytes
from microcompiler.ops.features import has_dsp, has_mve
from microcompiler.ops.plan import ISA_DSP, ISA_MVE, REFERENCE_PLAN, KernelPlan
from microcompiler.ops.quant import INT_RANGES, c_float, float_activation_range, quantize_multiplier
from microcompiler.templating import index_expr as _index

INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE = range(5)
INT32_MAX = 2**31 - 1


def _effective_scale(a: float, b: float, c: float) -> float:
    """a * b / c of three float32 scales, computed in double precision (the pinned TFLM's Prepare
    rounds the product this way: checked bit-exact against it, where float32 arithmetic differs)."""
    a, b, c = (float(np.float32(s)) for s in (a, b, c))
    return a * b / c


@register
class Svdf(OpKernel):
    kinds = ("SVDF",)
    tflm_refusals = ("a bias that is not one-dimensional [num_units] (bias->dims->data[0] != num_units)",)
    inputs = (5, 5)
    types = ("int8", "float32")
    type_notes = (
        "int8 input/output with int8 feature weights, int16 (or int8) time weights and activation "
        "state, int32 bias; float32; the activation state is a variable tensor kept across "
        "inferences"
    )
    options = "rank, fused activation (float32; TFLM's int8 kernel ignores it)"
    fast = {
        "dsp": "int8, int16 or int8 state (rows4: the feature matmul 4 filters per SMLAD step, the state's "
        "shift inside the SMLAD time loop)",
        "mve": "int8 (mve-rows4: the feature matmul as int8 blocks of 4 filters x 16 inputs, one VMLADAVA.S8 "
        "per filter and chunk; the time loop as rows4)",
    }
    input_roles = ("input", "weights_feature", "weights_time", "bias", "state")

    def _dims(self, op, graph):
        x = graph.tensors[op.inputs[INPUT]]
        wt = graph.tensors[op.inputs[WEIGHTS_TIME]]
        rank = int(op.options.get("rank", 0))
        batch, n_input = x.shape
        n_filter, n_memory = wt.shape
        return batch, n_input, n_filter, n_memory, rank, n_filter // rank if rank else 0

    def check(self, op, graph):
        t = [graph.tensors[i] if i >= 0 else None for i in op.inputs]
        x, wf, wt, bias, state = t
        y = graph.tensors[op.outputs[0]]
        require(
            op.inputs[STATE] >= 0 and state.persistent, op, "the activation state (input 4) must be a variable tensor"
        )
        require(
            wf.is_constant and wt.is_constant and (bias is None or bias.is_constant),
            op,
            "weights and bias must be constants",
        )
        require(
            len(x.shape) == 2
            and len(wf.shape) == 2
            and len(wt.shape) == 2
            and len(state.shape) == 2
            and len(y.shape) == 2,
            op,
            "input, weights, state and output must be 2-D",
        )
        rank = int(op.options.get("rank", 0))
        require(
            rank > 0 and wf.shape[0] % rank == 0,
            op,
            f"rank {rank} must be positive and divide the {wf.shape[0]} filters",
        )
        batch, n_input, n_filter, n_memory, _, n_unit = self._dims(op, graph)
        require(
            wf.shape == (n_filter, n_input),
            op,
            f"feature weights {list(wf.shape)} do not match [{n_filter}, {n_input}]",
        )
        require(
            state.shape == (batch, n_memory * n_filter),
            op,
            f"state shape {list(state.shape)} is not [{batch}, {n_memory * n_filter}]",
        )
        require(y.shape == (batch, n_unit), op, f"output shape {list(y.shape)} is not [{batch}, {n_unit}]")
        require_consistent(
            bias is None or tuple(bias.shape) == (n_unit,),
            op,
            f"bias has shape {[] if bias is None else list(bias.shape)}, expected [{n_unit}] (TFLM: "
            "bias->dims->data[0] != num_units)",
        )
        if x.dtype == "float32":
            require(
                all(u.dtype == "float32" for u in (wf, wt, state, y)) and (bias is None or bias.dtype == "float32"),
                op,
                "float32 SVDF needs float32 tensors throughout",
            )
            require(
                op.options.get("activation", "NONE") in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"),
                op,
                f"fused activation {op.options.get('activation')} is not supported",
            )
            return
        require(
            x.dtype == "int8" and wf.dtype == "int8" and y.dtype == "int8",
            op,
            f"types input/feature weights/output {x.dtype}/{wf.dtype}/{y.dtype} are not supported (int8 or float32)",
        )
        require(
            wt.dtype in ("int16", "int8") and state.dtype == wt.dtype,
            op,
            f"time weights ({wt.dtype}) and state ({state.dtype}) must both be int16 or both int8",
        )
        require(bias is not None and bias.dtype == "int32", op, "int8 SVDF needs an int32 bias (TFLM requires one)")
        require(
            all(u.quant is not None and not u.quant.per_channel for u in (x, wf, wt, state, y)),
            op,
            "int8 SVDF needs per-tensor quantization of input, weights, state and output",
        )
        expected = _effective_scale(state.quant.scale[0], wt.quant.scale[0], 1.0)
        require(
            bias.quant is not None and abs(bias.quant.scale[0] - expected) < 1e-5,
            op,
            "the bias scale must be state scale x time weights scale (TFLM checks it)",
        )

    def _wide(self, op, graph) -> bool:
        """Whether the time sums could leave int32 (then they run in int64 and wrap, as TFLM's do)."""
        _, _, _, n_memory, rank, _ = self._dims(op, graph)
        state, wt = graph.tensors[op.inputs[STATE]], graph.tensors[op.inputs[WEIGHTS_TIME]]
        lo, hi = INT_RANGES[state.dtype]
        state_zp = int(state.quant.zero_point[0])
        max_state = max(abs(lo - state_zp), abs(hi - state_zp))
        max_wt = int(np.max(np.abs(wt.data.astype(np.int64)))) if wt.size else 0
        bias = graph.tensors[op.inputs[BIAS]] if op.inputs[BIAS] >= 0 else None
        max_bias = int(np.max(np.abs(bias.data.astype(np.int64)))) if bias is not None else 0
        return rank * n_memory * max_wt * max_state + max_bias > INT32_MAX

    def _multipliers(self, op, graph) -> tuple[tuple[int, int], tuple[int, int]]:
        """The int8 kernel's feature (input x feature weights -> state) and output (state x time
        weights -> output) requantizations."""
        x, wf, wt, _, state = (graph.tensors[i] for i in op.inputs[:5])
        y = graph.tensors[op.outputs[0]]
        return (
            quantize_multiplier(_effective_scale(x.quant.scale[0], wf.quant.scale[0], state.quant.scale[0])),
            quantize_multiplier(_effective_scale(state.quant.scale[0], wt.quant.scale[0], y.quant.scale[0])),
        )

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """rows4 for int8 on cores with the DSP extension (ops/fast/svdf_rows4.py; mve-rows4 on Helium
        cores), else reference."""
        if (
            has_dsp(features)
            and (tuning or {}).get("variant") != "reference"
            and graph.tensors[op.inputs[INPUT]].dtype == "int8"
        ):
            if has_mve(features):
                n_input = self._dims(op, graph)[1]
                return KernelPlan.of(MVE_ROWS4, ISA_MVE, scratch_bytes=mve_scratch_bytes(n_input))
            return KernelPlan.of(ROWS4, ISA_DSP, scratch_bytes=0)
        return REFERENCE_PLAN

    def macs(self, op, graph):
        batch, n_input, n_filter, n_memory, _, _ = self._dims(op, graph)
        return batch * n_filter * (n_input + n_memory)

    def emit(self, op, graph, ctx):
        batch, n_input, n_filter, n_memory, rank, n_unit = self._dims(op, graph)
        x = ctx.tensor(op.inputs[INPUT])
        state, y = ctx.tensor(op.inputs[STATE]), ctx.tensor(op.outputs[0])
        has_bias = op.inputs[BIAS] >= 0
        plan = REFERENCE_PLAN
        if x.dtype != "float32":
            plan = REFERENCE_PLAN if ctx.reference_only else self.kernel_plan(op, graph, ctx.features, ctx.tuning)
            ctx.plan = plan
        if plan.is_(ROWS4) or plan.is_(MVE_ROWS4):  # before the reference's arrays are named (they would be emitted)
            helium = plan.is_(MVE_ROWS4)
            return emit_svdf_rows4(op, graph, ctx, self._dims(op, graph), *self._multipliers(op, graph), helium=helium)
        b, f, u = ("b", batch, n_filter * n_memory), ("f", n_filter, n_memory), ("u", n_unit, rank * n_memory)
        r = ("r", rank, n_memory)
        values = dict(
            feature_row=_index(("f", n_filter, n_input)),
            input_row=_index(("b", batch, n_input)),
            newest=_index(b, f, n_memory - 1),
            memory_row=_index(b, u, r),
            time_row=_index(u, r),
            bias_index=_index(("u", n_unit, 1)),
            output_index=_index(("b", batch, n_unit), ("u", n_unit, 1)),
            batch=batch,
            n_input=n_input,
            n_filter=n_filter,
            n_memory=n_memory,
            rank=rank,
            n_unit=n_unit,
            state_len=state.size,
            input=ctx.arg(op.inputs[INPUT]),
            weights_feature=ctx.arg(op.inputs[WEIGHTS_FEATURE]),
            weights_time=ctx.arg(op.inputs[WEIGHTS_TIME]),
            bias=ctx.arg(op.inputs[BIAS]) if has_bias else None,
            state=ctx.arg(op.inputs[STATE]),
            output=ctx.arg(op.outputs[0]),
        )
        if x.dtype == "float32":
            lo, hi = float_activation_range(op.options.get("activation", "NONE"))
            return ctx.render(
                "svdf.c.j2",
                integer=False,
                state_t="float",
                acc_t="float",
                zero="0.0f",
                act_min=c_float(lo),
                act_max=c_float(hi),
                **values,
            )
        state_zp = int(state.quant.zero_point[0])
        lo, hi = INT_RANGES[state.dtype]
        m1, m2 = self._multipliers(op, graph)
        # TFLM sums in int32 (wrapping); where the sum could leave int32, sum in int64 and wrap at the end.
        wide = self._wide(op, graph)
        return ctx.render(
            "svdf.c.j2",
            integer=True,
            state_t=f"{state.dtype}_t",
            acc_t="int64_t" if wide else "int32_t",
            zero="0",
            wide=wide,
            input_offset=-int(x.quant.zero_point[0]),
            state_zp=state_zp,
            state_min=lo,
            state_max=hi,
            m1=m1,
            m2=m2,
            output_offset=int(y.quant.zero_point[0]),
            **values,
        )
