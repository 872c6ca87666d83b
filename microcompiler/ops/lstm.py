"""UNIDIRECTIONAL_SEQUENCE_LSTM: int8 (int8 weights, int16 cell state, int32 biases), TFLM's 16x8
variant (int16 activations, int8 weights, int16 cell state, int64 biases: the FCs sum in int64) and float32,
bit-exact with TFLite Micro's kernel (unidirectional_sequence_lstm.cc, lstm_eval.h/.cc,
lstm_eval_common.cc).

TFLM runs the plain LSTM only: all four gates (no CIFG), no peephole, no projection, no layer norm
(inputs 9-11, 16-17 and 20-23 absent). The hidden state (input 18) and the cell state (input 19) are
variable tensors kept across inferences (docs/state.md); each invocation runs every time step of its
input (``[batch, time, input]``, or ``[time, batch, input]`` with ``time_major``), so the output is
the hidden state after each step.

One step of one batch row, integer (gate order as TFLM computes them: forget, input, cell, output):

1. each gate = input FC + recurrent FC, each an int8 x int8 dot product (plus the gate bias for the
   input FC) requantized to int16 with a scale of 2^-12 (Q3.12) and saturated, then summed with
   saturation; sigmoid (tanh for the cell gate, the fused activation) in Q0.15 from
   TFLM's int16 sigmoid table (``mc_sigmoid_s16``/``mc_tanh_s16`` of kernel_activation.h);
2. cell = sat16(requant(forget * cell) + requant(input * cell gate)), clipped by ``cell_clip``;
3. hidden = requant(output gate * tanh(cell)) + hidden zero point, saturated to int8 (int16), where tanh
   reads the cell state with its power-of-two scale.

Float32 is the same data flow in float (TFLM's Logistic with its cut-offs, ``mc_tanhf``).
"""

from __future__ import annotations

import numpy as np

from microcompiler.errors import ModelFormatError
from microcompiler.ops import fast
from microcompiler.ops.base import OpKernel, register, require, require_consistent
from microcompiler.ops.fast import lstm_gates
from microcompiler.ops.features import has_dsp, has_mve
from microcompiler.ops.lut16 import SIGMOID_TABLE_UINT16
from microcompiler.ops.plan import ISA_C, ISA_DSP, ISA_MVE, REFERENCE_PLAN, KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import c_float, quantize_multiplier
from microcompiler.ops.softmax_logistic import checked_log2
from microcompiler.templating import index_expr

# the four gates' matmuls, 4 rows per SMLAD dot product (mc_dot_r4)
LSTM_ROWS4 = Variant("rows4", ("kernel_simd.h",))

INPUT = 0
INPUT_WEIGHTS = {"input": 1, "forget": 2, "cell": 3, "output": 4}
RECURRENT_WEIGHTS = {"input": 5, "forget": 6, "cell": 7, "output": 8}
PEEPHOLE = (9, 10, 11)
BIASES = {"input": 12, "forget": 13, "cell": 14, "output": 15}
PROJECTION = (16, 17)
HIDDEN_STATE, CELL_STATE = 18, 19
LAYER_NORM = (20, 21, 22, 23)
GATES = ("forget", "input", "cell", "output")  # the order TFLM computes them in
GATE_SCALE = 2.0**-12  # gate pre-activations: Q3.12
GATE_OUTPUT_SCALE = 2.0**-15  # sigmoid/tanh outputs: Q0.15
TANH_INTEGER_BITS = 3  # the int16 tanh reads Q3.12


def _f32(x: float) -> float:
    return float(np.float32(x))


def _multiplier(*factors_over: float) -> tuple[int, int]:
    """QuantizeMultiplier of a * b / c computed in double from float32 scales (as TFLM's Prepare)."""
    a, b, c = (_f32(s) for s in factors_over)
    return quantize_multiplier(a * b / c)


# The largest |product| of two Q0.15 values (one of them at most 32767): below 2^30, what mc_requant_fast needs.
Q15_PRODUCT_BOUND = 32767 * 32768


def _product(multiplier: tuple[int, int], zero_point: int, fast_kernel) -> dict:
    """The requantization of a product of two Q0.15 gate values: with the rows4 kernel SMMLAR + shift
    (mc_requant_fast, the zero point in c) where the multiplier qualifies, else TFLM's mc_requantize."""
    m, s = multiplier
    ok, c, r = fast.requant_table(np.array([m]), np.array([s]), zero_point, np.array([Q15_PRODUCT_BOUND]))
    if fast_kernel is not None and ok:
        # pow2: s where m = 2^(31 - s) (mc_requant_pow2), else 0
        pow2 = 32 - m.bit_length() if m > 1 and m & (m - 1) == 0 else 0
        return {"fast": True, "m": m, "c": int(c[0]), "r": int(r[0]), "pow2": pow2}
    return {"fast": False, "m": m, "s": s}


def sigmoid_sym_table() -> np.ndarray:
    """The sigmoid table extended to negative segments for ``mc_sigmoid_s16_sym`` and
    ``mc_tanh_s16_sym`` (kernel_activation.h), entries -256..256 (entry 0 at index 256): table[k] for
    k in 0..255, 65536 - table[-k] for k in -255..-1, the saturated values at -256 and 256 (tanh's
    input saturated to 17 bits reads them)."""
    table = np.array(SIGMOID_TABLE_UINT16, dtype=np.int64)
    mirrored = 65536 - table[:0:-1]
    return np.concatenate([mirrored[:1], mirrored, table, table[-1:]]).astype(np.uint16)


def _roles() -> tuple[str, ...]:
    names = {0: "input", 18: "hidden_state", 19: "cell_state"}
    for table, what in (
        (INPUT_WEIGHTS, "input_to_{}_weights"),
        (RECURRENT_WEIGHTS, "recurrent_to_{}_weights"),
        (BIASES, "{}_gate_bias"),
    ):
        for gate, i in table.items():
            names[i] = what.format(gate)
    return tuple(names.get(i, f"input{i}") for i in range(24))


@register
class UnidirectionalSequenceLstm(OpKernel):
    kinds = ("UNIDIRECTIONAL_SEQUENCE_LSTM",)
    inputs = (1, 24)  # 24 in every file; the optional ones in the middle are -1 (check() counts them)
    types = ("int8", "int16", "float32")
    type_notes = (
        "int8 input/hidden state/output with int8 weights, int16 cell state (power-of-two scale) and "
        "int32 biases, as TFLM's integer LSTM; int16 activations (zero point 0) with int8 weights and int64 "
        "biases; float32; all four gates, no peephole, projection or "
        "layer norm (as TFLM); hidden and cell state are variable tensors kept across inferences"
    )
    options = "fused activation of the cell gate (TANH), cell_clip, time_major"
    tflm_refusals = ("a hidden state whose second dimension is not the state size of the weights",)
    fast = {
        "dsp": "int8 (rows4: the gate matmuls as two FULLY_CONNECTED of the 4 gates stacked, 4 rows per SMLAD "
        "dot product, int16 weight pairs, the zero points folded into the biases); int16x8 (int16-rows4-s8: 4 rows "
        "per SMLAD pass over the int16 activations, the int8 weights widened in registers by SXTB16; int16-rows4 "
        'with {"weights": "s16"}: int16 pairs in flash; int32 sums proven exact); without it int8 pairs-rows4 '
        "(the int8 weights 4 rows per word, two rows per 32 x 32 -> 64 multiply-accumulate) and portable C",
        "mve": "int8 (mve-rows4: the same stacked gate matmuls as int8 blocks of 4 rows x 16 inputs, one "
        "VMLADAVA.S8 per row and chunk, requantized 4 rows at a time with VQRDMULH)",
    }
    input_roles = _roles()
    tuning_knobs = {"weights": ("s8", "s16")}  # int16x8: int8 weights widened in registers, or int16 pairs

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """rows4 on DSP cores for int8 (the int32 sums are exact: no dot product can leave int32): the
        input FC and the recurrent FC of the four gates each one FULLY_CONNECTED of 4 x n_state rows, 4
        rows per mc_dot_r4 (SXTB16 of the activations, SMLAD with int16 weight pairs: 13 instructions
        per 16 MACs), the input and hidden zero points folded into the biases at compile time; on
        Helium cores mve-rows4 instead (ops/fast/lstm_gates.py). int16x8: int16-rows4-s8 (int8 weights
        in flash, widened in registers) on every core where the weights prove the int32 sums exact, or
        int16-rows4 (int16 pairs in flash) with the tuning knob {"weights": "s16"} (ops/fast/lstm_gates.py)."""
        _, _, n_input, n_state, _ = self._dims(op, graph)
        int8 = graph.tensors[op.inputs[INPUT]].dtype == "int8"
        exact = max(n_input, n_state) * 127 * 255 < 2**31
        if (tuning or {}).get("variant") == "reference":
            return REFERENCE_PLAN
        if graph.tensors[op.inputs[INPUT]].dtype == "int16" and lstm_gates.s16_exact(self._sides(op, graph)):
            if (tuning or {}).get("weights") == "s16":
                return KernelPlan.of(lstm_gates.INT16_ROWS4, dsp_or_c(features), rows=4, weights="s16")
            return KernelPlan.of(lstm_gates.INT16_ROWS4_S8, dsp_or_c(features), rows=4, weights="s8")
        if int8 and exact:
            if has_mve(features):
                return KernelPlan.of(lstm_gates.MVE_ROWS4, ISA_MVE, rows=4, weights="s8", requant="vqrdmulh")
            if has_dsp(features):
                return KernelPlan.of(LSTM_ROWS4, ISA_DSP, rows=4, weights="s16")
            return KernelPlan.of(lstm_gates.PAIRS_ROWS4, ISA_C, rows=4, weights="s8", extract="pairs")
        return REFERENCE_PLAN

    def _dims(self, op, graph):
        x = graph.tensors[op.inputs[INPUT]]
        time_major = bool(op.options.get("time_major", False))
        outer, inner, n_input = x.shape
        batch, steps = (inner, outer) if time_major else (outer, inner)
        n_state = graph.tensors[op.inputs[INPUT_WEIGHTS["forget"]]].shape[0]
        return batch, steps, n_input, n_state, time_major

    def check(self, op, graph):
        if len(op.inputs) != 24:
            raise ModelFormatError(
                f"operator {op.index} ({op.kind}) has {len(op.inputs)} inputs, expected 24; the file is corrupted"
            )

        def t(i):
            return graph.tensors[op.inputs[i]] if op.inputs[i] >= 0 else None

        absent = [i for i in (*PEEPHOLE, *PROJECTION, *LAYER_NORM) if op.inputs[i] >= 0]
        require(
            not absent,
            op,
            f"inputs {absent} are set: TFLM runs the plain LSTM only (no peephole, projection or layer norm)",
        )
        needed = [
            INPUT,
            *INPUT_WEIGHTS.values(),
            *RECURRENT_WEIGHTS.values(),
            *BIASES.values(),
            HIDDEN_STATE,
            CELL_STATE,
        ]
        missing = [i for i in needed if op.inputs[i] < 0]
        require(
            not missing, op, f"inputs {missing} are missing (CIFG, without the input gate, is not supported by TFLM)"
        )
        x, y = t(INPUT), graph.tensors[op.outputs[0]]
        hidden, cell = t(HIDDEN_STATE), t(CELL_STATE)
        require(
            hidden.persistent and cell.persistent,
            op,
            "hidden state (input 18) and cell state (input 19) must be variable tensors",
        )
        weights = [t(i) for i in (*INPUT_WEIGHTS.values(), *RECURRENT_WEIGHTS.values())]
        biases = [t(i) for i in BIASES.values()]
        require(all(w.is_constant for w in weights + biases), op, "weights and biases must be constants")
        require(len(x.shape) == 3 and len(y.shape) == 3, op, "input and output must be 3-D")
        batch, steps, n_input, n_state, _ = self._dims(op, graph)
        for name, i in INPUT_WEIGHTS.items():
            require(
                t(i).shape == (n_state, n_input),
                op,
                f"input-to-{name} weights {list(t(i).shape)} are not [{n_state}, {n_input}]",
            )
        for name, i in RECURRENT_WEIGHTS.items():
            require(
                t(i).shape == (n_state, n_state),
                op,
                f"recurrent-to-{name} weights {list(t(i).shape)} are not [{n_state}, {n_state}]",
            )
        require(all(b.shape == (n_state,) for b in biases), op, f"gate biases must have {n_state} elements")
        require(
            hidden.size == batch * n_state and cell.size == batch * n_state,
            op,
            f"hidden and cell state must have {batch} x {n_state} elements",
        )
        # TFLM's CreateLstmSizeInfo takes the state dimension from the hidden state's second dimension
        # (hidden_state_tensor_shape->data[1]) and checks every weight and bias against it
        require_consistent(
            len(hidden.shape) >= 2 and hidden.shape[1] == n_state,
            op,
            f"the hidden state has shape {list(hidden.shape)}; TFLM reads the state size {n_state} of the "
            "weights from its second dimension",
        )
        require(
            y.shape == (*x.shape[:2], n_state), op, f"output shape {list(y.shape)} is not {[*x.shape[:2], n_state]}"
        )
        activation = op.options.get("activation", "TANH")
        require(
            activation == "TANH", op, f"cell gate activation {activation} is not supported (TANH; TFLM runs no other)"
        )
        require(float(op.options.get("cell_clip", 0.0)) >= 0, op, "cell_clip must not be negative")
        if x.dtype == "float32":
            require(
                all(u.dtype == "float32" for u in [y, hidden, cell, *weights, *biases]),
                op,
                "float32 LSTM needs float32 tensors throughout",
            )
            return
        require(
            x.dtype in ("int8", "int16") and y.dtype == x.dtype and hidden.dtype == x.dtype,
            op,
            f"types input/hidden state/output {x.dtype}/{hidden.dtype}/{y.dtype} are not supported "
            "(int8, int16 or float32, the same for all three)",
        )
        require(cell.dtype == "int16", op, f"cell state type {cell.dtype} is not supported (int16, as TFLM)")
        bias_dtype = "int32" if x.dtype == "int8" else "int64"
        require(
            all(w.dtype == "int8" for w in weights) and all(b.dtype == bias_dtype for b in biases),
            op,
            f"{x.dtype} LSTM needs int8 weights and {bias_dtype} biases",
        )
        quantized = [x, hidden, cell, *weights]
        require(
            all(u.quant is not None and not u.quant.per_channel for u in quantized),
            op,
            "int8 LSTM needs per-tensor quantization of input, states and weights",
        )
        require(all(int(w.quant.zero_point[0]) == 0 for w in weights), op, "weights must have zero point 0")
        require(int(cell.quant.zero_point[0]) == 0, op, "the cell state must have zero point 0")
        require(
            x.dtype == "int8" or (int(x.quant.zero_point[0]) == 0 and int(hidden.quant.zero_point[0]) == 0),
            op,
            "int16 input and hidden state must have zero point 0",
        )
        power = checked_log2(cell.quant.scale[0])[1]
        require(
            -30 <= 15 + power - TANH_INTEGER_BITS <= 14,
            op,
            f"cell state scale {cell.quant.scale[0]} is out of the range TFLM's int16 tanh can read",
        )

    def macs(self, op, graph):
        batch, steps, n_input, n_state, _ = self._dims(op, graph)
        return batch * steps * 4 * n_state * (n_input + n_state)

    def _stacked(self, op, graph, table) -> np.ndarray:
        """The four gates' tensors as one array in GATES order (one flash array, one gate loop)."""
        return np.stack([graph.tensors[op.inputs[table[g]]].data for g in GATES])

    def emit(self, op, graph, ctx):
        batch, steps, n_input, n_state, time_major = self._dims(op, graph)
        x, hidden, cell = (
            ctx.tensor(op.inputs[INPUT]),
            ctx.tensor(op.inputs[HIDDEN_STATE]),
            ctx.tensor(op.inputs[CELL_STATE]),
        )
        integer = x.dtype != "float32"
        clip = float(op.options.get("cell_clip", 0.0))
        values = dict(
            batch=batch,
            steps=steps,
            n_input=n_input,
            n_state=n_state,
            time_major=time_major,
            integer=integer,
            ix=index_expr,
            input=ctx.arg(op.inputs[INPUT]),
            output=ctx.arg(op.outputs[0]),
            hidden=ctx.arg(op.inputs[HIDDEN_STATE]),
            cell=ctx.arg(op.inputs[CELL_STATE]),
            rows4=None,
            mve=None,
            s16=None,
            pairs=None,
        )
        plan = REFERENCE_PLAN if ctx.reference_only else self.kernel_plan(op, graph, ctx.features, ctx.tuning)
        ctx.plan = plan
        gate_bytes = 4 * n_state * (2 if integer else 4)
        if plan.variant == LSTM_ROWS4:
            values["rows4"] = self._rows4(op, graph, ctx, plan)
        elif plan.variant == lstm_gates.MVE_ROWS4:
            values["mve"] = lstm_gates.emit_mve(ctx, self._sides(op, graph), gate_bytes)
        elif plan.variant == lstm_gates.PAIRS_ROWS4:
            values["pairs"] = lstm_gates.emit_pairs(ctx, self._sides(op, graph))
        elif plan.variant in (lstm_gates.INT16_ROWS4, lstm_gates.INT16_ROWS4_S8):
            values["s16"] = lstm_gates.emit_s16(
                ctx, self._sides(op, graph), gate_bytes, s8=plan.variant == lstm_gates.INT16_ROWS4_S8
            )
        else:
            values.update(
                input_weights=ctx.const("input_weights", self._stacked(op, graph, INPUT_WEIGHTS)),
                recurrent_weights=ctx.const("recurrent_weights", self._stacked(op, graph, RECURRENT_WEIGHTS)),
                bias=ctx.const("gate_bias", self._stacked(op, graph, BIASES)),
            )
        fast_rows = values["mve"] or values["s16"]
        fused = values["pairs"] and values["pairs"]["fused"]  # no gate buffer: the cell update after each block
        values["scratch"] = None if fused else ctx.scratch(gate_bytes + (fast_rows["row_bytes"] if fast_rows else 0))
        if not integer:
            return ctx.render(
                "lstm.c.j2", state_t="float", act_t="float", clip=c_float(clip) if clip > 0 else None, **values
            )
        weights = {g: ctx.tensor(op.inputs[INPUT_WEIGHTS[g]]) for g in GATES}
        recurrent = {g: ctx.tensor(op.inputs[RECURRENT_WEIGHTS[g]]) for g in GATES}
        x_scale, h_scale, c_scale = (u.quant.scale[0] for u in (x, hidden, cell))
        input_m = [_multiplier(x_scale, weights[g].quant.scale[0], GATE_SCALE) for g in GATES]
        recurrent_m = [_multiplier(h_scale, recurrent[g].quant.scale[0], GATE_SCALE) for g in GATES]
        power = checked_log2(c_scale)[1]
        # TFLM's int16 tanh reads Q3.12: the cell state (scale 2^power) is scaled by 3 * 2^(12 + power).
        left = 15 + power - TANH_INTEGER_BITS
        tanh_m, tanh_shift = (3 << left, 0) if left >= 0 else (3, -left)
        fast_gates = values["rows4"] or values["mve"] or values["pairs"]
        quantized_clip = int(min(max(clip / _f32(c_scale), -32768.0), 32767.0)) if clip > 0 else None
        if not (fast_gates or values["s16"]):  # the reference gate loop (the fast ones have their own, per side)
            values.update(
                input_multiplier=ctx.const("input_multiplier", np.array([m for m, _ in input_m], np.int32)),
                input_shift=ctx.const("input_shift", np.array([s for _, s in input_m], np.int32)),
                recurrent_multiplier=ctx.const("recurrent_multiplier", np.array([m for m, _ in recurrent_m], np.int32)),
                recurrent_shift=ctx.const("recurrent_shift", np.array([s for _, s in recurrent_m], np.int32)),
            )
        return ctx.render(
            "lstm.c.j2",
            state_t="int16_t",
            clip=quantized_clip,
            act_t=f"{x.dtype}_t",
            acc_t="int32_t" if x.dtype == "int8" else "int64_t",
            requantize="mc_requantize" if x.dtype == "int8" else "mc_requantize64",
            input_offset=-int(x.quant.zero_point[0]),
            hidden_zp=int(hidden.quant.zero_point[0]),
            forget_m=_product(_multiplier(GATE_OUTPUT_SCALE, c_scale, c_scale), 0, fast_gates),
            input_m=_product(_multiplier(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, c_scale), 0, fast_gates),
            hidden_m=_product(
                _multiplier(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, h_scale),
                int(hidden.quant.zero_point[0]),
                fast_gates,
            ),
            tanh_m=tanh_m,
            tanh_shift=tanh_shift,
            tanh_rounding=(1 << (tanh_shift - 1)) if tanh_shift else 0,
            **self._tables(ctx, bool(values["pairs"]), tanh_m, tanh_shift),
            **values,
        )

    @staticmethod
    def _tables(ctx, sym: bool, tanh_m: int, tanh_shift: int) -> dict:
        """The gates' sigmoid table; with ``sym`` (the portable kernels) extended to negative segments
        (``mc_sigmoid_s16_sym``: entries -256..256, ``sym`` the C expression of entry 0) and whether
        the cell state's tanh input fits 17 bits signed without a saturation."""
        if not sym:
            table = np.array(SIGMOID_TABLE_UINT16, dtype=np.uint16)
            return dict(table=ctx.const("sigmoid_table", table, "uint16_t"), sym=None)
        name = ctx.const("sigmoid_sym", sigmoid_sym_table(), "uint16_t")
        top = (3 * 32768 + (1 << (tanh_shift - 1))) >> tanh_shift if tanh_shift else 32768 * tanh_m
        return dict(table=None, sym=f"({name} + 256)", sym_cell_fits=top < 1 << 16)

    def _rows4(self, op, graph, ctx, plan) -> dict:
        """The flash arrays and constants of the rows4 gate matmuls: per side (input, hidden) the stacked
        weights [4 x n_state rows][depth] as rows4 int16 pairs (packing.pack_s16_rows4) plus the depth % 4
        trailing weights as int8, the start values bias - zero point * sum(w) (the hidden side: no bias)
        and the requantization per gate (mc_requant_fast where every gate's multiplier and |acc| bound
        allow it, as for the convolutions)."""
        x, hidden = graph.tensors[op.inputs[INPUT]], graph.tensors[op.inputs[HIDDEN_STATE]]
        sides = {}
        parts = {}
        for side, table, act in (("input", INPUT_WEIGHTS, x), ("hidden", RECURRENT_WEIGHTS, hidden)):
            w = self._stacked(op, graph, table).astype(np.int8)
            rows, depth = w.shape[0] * w.shape[1], w.shape[2]
            w = w.reshape(rows, depth)
            bias = (
                self._stacked(op, graph, BIASES).reshape(-1).astype(np.int64)
                if side == "input"
                else np.zeros(rows, np.int64)
            )
            start = bias - int(act.quant.zero_point[0]) * w.astype(np.int64).sum(axis=1)
            scale = (x if side == "input" else hidden).quant.scale[0]
            m = [_multiplier(scale, graph.tensors[op.inputs[table[g]]].quant.scale[0], GATE_SCALE) for g in GATES]
            mult, shift = np.array([q for q, _ in m], np.int64), np.array([e for _, e in m], np.int64)
            bound = fast.acc_bounds(bias, w).reshape(4, -1).max(axis=1)
            parts[side] = (w, start, mult, fast.requant_table(mult, shift, 0, bound))
        # The gate blocks' sides in turn (lstm.c.j2): every requantization mc_requant_fast, whole groups
        # of 4 inputs and 4 units. There the int16 weight pairs and the start values are stored doubled
        # (|2 acc| < 2^31: the |acc| < 2^30 of mc_requant_fast), so mc_requant_fast2 takes the sums as
        # they are (one instruction fewer per requantization).
        doubled = (
            all(p[3][0] and p[0].shape[1] % 4 == 0 for p in parts.values()) and parts["hidden"][0].shape[1] % 4 == 0
        )
        for side in ("input", "hidden"):
            w, start, mult, (is_fast, c, r) = parts[side]
            rows, depth = w.shape
            steps, tail = depth // 4, depth % 4
            scale2 = 2 if doubled else 1
            # the gate blocks with the same right shift and rounding constant for the 4 gates: literals
            # (the shift folds into the SSAT)
            uniform = (int(c[0]), int(r[0])) if doubled and len(set(c.tolist())) == len(set(r.tolist())) == 1 else None
            sides[side] = dict(
                steps=steps,
                tail=tail,
                fast=is_fast,
                doubled=doubled,
                weights=ctx.const(
                    f"{side}_weights",
                    fast.pack_s16_rows4(w.astype(np.int32) * scale2),
                    comment=(
                        f"{side} FC of the 4 gates (forget, input, cell, output) stacked [{rows} rows][{depth}]: per block of 4 "
                        "rows and group of 4 inputs k0..k3 the int16 pairs (k0,k2) (k1,k3) of rows 0..3"
                        + (", doubled" if doubled else "")
                    ),
                )
                if steps
                else None,
                tail_weights=ctx.const(
                    f"{side}_tail_weights",
                    w[:, 4 * steps :].copy(),
                    comment=(f"the last {tail} weights of each row [{rows}][{tail}], int8"),
                )
                if tail
                else None,
                start=ctx.const(
                    f"{side}_start",
                    fast.wrap32(start * scale2),
                    comment=(
                        f"accumulator start per row [{rows}]: "
                        + ("the gate bias minus" if side == "input" else "minus")
                        + f" the {side} zero point times the row's weights"
                        + (", doubled" if doubled else "")
                    ),
                ),
                multiplier=ctx.const(
                    f"{side}_multiplier",
                    mult.astype(np.int32),
                    comment="requantization multiplier to Q3.12 per gate [4]",
                ),
                shift=None
                if uniform
                else ctx.const(
                    f"{side}_{'c' if is_fast else 'shift'}",
                    c,
                    comment=(
                        "rounding constant 2^(r-1) per gate [4]" if is_fast else "requantization shift per gate [4]"
                    ),
                ),
                r=ctx.const(f"{side}_r", r, comment="right shift per gate [4]") if is_fast and not uniform else None,
                uniform=uniform,
            )
        ctx.note(
            requant=("smmlar-doubled" if sides["input"]["doubled"] else "smmlar")
            if sides["input"]["fast"] and sides["hidden"]["fast"]
            else ("reference" if not (sides["input"]["fast"] or sides["hidden"]["fast"]) else "mixed")
        )
        return sides

    def _sides(self, op, graph) -> dict:
        """Per side (input, hidden) of the gate matmuls, for the fast gate kernels (ops/fast/lstm_gates.py):
        the stacked weights [4 x n_state rows][depth] (int8), the bias per row (the hidden side: none,
        zeros), the activation's zero point and the requantization to Q3.12 per gate (multiplier, shift)."""
        x, hidden = graph.tensors[op.inputs[INPUT]], graph.tensors[op.inputs[HIDDEN_STATE]]
        sides = {}
        for side, table, act in (("input", INPUT_WEIGHTS, x), ("hidden", RECURRENT_WEIGHTS, hidden)):
            w = self._stacked(op, graph, table).astype(np.int8)
            rows = w.shape[0] * w.shape[1]
            bias = (
                self._stacked(op, graph, BIASES).reshape(-1).astype(np.int64)
                if side == "input"
                else np.zeros(rows, np.int64)
            )
            scale = act.quant.scale[0]
            m = [_multiplier(scale, graph.tensors[op.inputs[table[g]]].quant.scale[0], GATE_SCALE) for g in GATES]
            sides[side] = lstm_gates.Side(
                weights=w.reshape(rows, -1),
                bias=bias,
                zero_point=int(act.quant.zero_point[0]),
                multiplier=np.array([q for q, _ in m], np.int64),
                shift=np.array([e for _, e in m], np.int64),
            )
        return sides
