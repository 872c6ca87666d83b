"""``SignalRfft`` and ``SignalIrfft``: TFLM's real FFT and its inverse (custom operators of audio
front ends), int16, int32 and float32.

TFLM computes it with KISS FFT: the n/2-point complex transform of the frame's sample pairs, then
a split into n/2 + 1 bins. The int16 and int32 builds are fixed point (Q15 or Q31 twiddles, each
stage scales by 1/radix, so the bins come out divided by n); the generated code follows the same arithmetic and
the same decomposition (radix 4, then a radix 2 if n/2 is not a power of 4) bit for bit. The
transform length must be a power of two (every audio front end uses one); the frame (the last
input dimension, zero-padded) must not be longer. The radix-digit order of the input and the
twiddles are computed here; the butterflies are crt's kernel_fft.h. The inverse takes n/2 + 1
bins per frame to n samples (KISS FFT's inverse: the fixed-point ones halve at each stage as well,
the float one is divided by n afterwards, as TFLM does).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type
from microcompiler.ops import custom_options as opt
from microcompiler.ops.base import OpKernel, register, require

_SUFFIX = {"int16": "16", "int32": "32", "float32": "f"}  # of the kernel_fft*.h functions
# TFLite's TensorType numbers, as the converter writes them into the option 'T'
_TENSOR_TYPES = {"float32": 0, "int32": 2, "int16": 7}
_FIXED_MAX = {"int16": 32767, "int32": 2147483647}  # KISS FFT's SAMP_MAX: twiddles are Q15 / Q31
_MAX_LENGTH = 1 << 16  # the digit order is stored as int16


def kiss_factors(n: int) -> list[tuple[int, int]]:
    """KISS FFT's factorisation of n: (radix, remaining length) pairs, powers of 4 first."""
    factors, p, floor_sqrt = [], 4, int(np.floor(np.sqrt(n)))
    while True:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > floor_sqrt:
                p = n
        n //= p
        factors.append((p, n))
        if n <= 1:
            return factors


def digit_order(factors, stride=1, offset=0) -> list[int]:
    """Input index of each output slot after KISS FFT's recursive reordering."""
    p, m = factors[0]
    if m == 1:
        return [offset + j * stride for j in range(p)]
    return [k for j in range(p) for k in digit_order(factors[1:], stride * p, offset + j * stride)]


def stages(factors) -> list[tuple[int, int, int]]:
    """(radix, sub-transform length, twiddle stride) of each butterfly pass, in execution order."""
    out, stride = [], 1
    for p, m in factors:
        out.append((p, m, stride))
        stride *= p
    return out[::-1]


def twiddles(phases: np.ndarray, dtype: str) -> np.ndarray:
    """exp(i * phase) as (real, imaginary) pairs: Q15 or Q31 rounded half up, or float32."""
    pairs = np.stack([np.cos(phases), np.sin(phases)], axis=1).reshape(-1)
    if dtype in _FIXED_MAX:
        return np.floor(0.5 + _FIXED_MAX[dtype] * pairs).astype(dtype)
    return pairs.astype(np.float32)


class _Fft(OpKernel):
    """What the forward and the inverse transform share: options, types and the KISS FFT plan."""

    types = ("int16", "int32", "float32")
    options = "custom (flexbuffer): T, fft_length"
    quantized_io = False

    def _length(self, op, graph) -> int:
        """The checked fft_length."""
        opt.exact_keys(op, ("T", "fft_length"))
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(x.dtype == y.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        require(x.dtype in self.types, op, f"type {x.dtype} is not supported (int16, int32, float32)")
        require(
            opt.integer(op, "T") == _TENSOR_TYPES[x.dtype],
            op,
            f"option T {opt.integer(op, 'T')} does not name the tensors' type {x.dtype}",
        )
        n = opt.integer(op, "fft_length")
        require(
            4 <= n <= _MAX_LENGTH and n & (n - 1) == 0,
            op,
            f"fft_length {n} is not supported yet (a power of two from 4 to {_MAX_LENGTH})",
        )
        require(
            len(x.shape) >= 1 and len(y.shape) == len(x.shape),
            op,
            f"input shape {list(x.shape)} and output shape {list(y.shape)} must have the same rank",
        )
        return n

    def macs(self, op, graph):
        n = self._length(op, graph)
        return graph.tensors[op.outputs[0]].size * int(np.log2(n))

    def plan(self, op, graph, ctx, n, inverse):
        """Template values: the stages, the digit order and the (inverse) twiddles as constants."""
        dtype = graph.tensors[op.inputs[0]].dtype
        half = n // 2
        factors = kiss_factors(half)
        sign = 1 if inverse else -1
        order = np.array(digit_order(factors), np.int16)
        slots = np.argsort(order).astype(np.int16)  # where each value goes (the inverse writes there)
        return dict(
            ctype=c_type(dtype),
            suffix=_SUFFIX[dtype],
            fixed=dtype in _FIXED_MAX,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            n=n,
            half=half,
            stages=stages(factors),
            zero="0.0f" if dtype == "float32" else "0",
            order=None if inverse else ctx.const("digit_order", order),
            slots=ctx.const("digit_slots", slots) if inverse else None,
            twiddles=ctx.const("twiddles", twiddles(sign * 2 * np.pi * np.arange(half) / half, dtype)),
            super_twiddles=ctx.const(
                "super_twiddles", twiddles(sign * np.pi * ((np.arange(half // 2) + 1) / half + 0.5), dtype)
            ),
        )


def _variables(frames, plan, *always):
    return (
        (["f"] if frames > 1 else [])
        + list(always)
        + (["group"] if any(stride > 1 for _, _, stride in plan["stages"]) else [])
    )


@register
class Rfft(_Fft):
    kinds = ("SignalRfft",)
    type_notes = (
        "input and output of the same type; (n/2 + 1) complex bins per frame of at most n samples; n a power of two"
    )

    def _geometry(self, op, graph):
        n = self._length(op, graph)
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        length = int(x.shape[-1])
        require(1 <= length <= n, op, f"frames of {length} samples do not fit the {n}-point transform")
        require(
            list(y.shape[:-1]) == list(x.shape[:-1]) and y.shape[-1] == n + 2,
            op,
            f"output shape {list(y.shape)} must be {list(x.shape[:-1]) + [n + 2]} ({n // 2 + 1} complex bins "
            "per frame)",
        )
        return x.size // length, length, n

    def check(self, op, graph):
        self._geometry(op, graph)

    def emit(self, op, graph, ctx):
        frames, length, n = self._geometry(op, graph)
        plan = self.plan(op, graph, ctx, n, inverse=False)
        return ctx.render(
            "signal_rfft.c.j2", frames=frames, length=length, variables=_variables(frames, plan, "k"), **plan
        )


@register
class Irfft(_Fft):
    kinds = ("SignalIrfft",)
    type_notes = "input and output of the same type; n samples per frame of (n/2 + 1) complex bins; n a power of two"

    def _geometry(self, op, graph):
        n = self._length(op, graph)
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(
            x.shape[-1] == n + 2,
            op,
            f"input frames of {x.shape[-1]} values are not the {n // 2 + 1} complex bins of the {n}-point transform",
        )
        require(
            list(y.shape) == list(x.shape[:-1]) + [n],
            op,
            f"output shape {list(y.shape)} must be {list(x.shape[:-1]) + [n]}",
        )
        return x.size // (n + 2), n

    def check(self, op, graph):
        self._geometry(op, graph)

    def emit(self, op, graph, ctx):
        frames, n = self._geometry(op, graph)
        plan = self.plan(op, graph, ctx, n, inverse=True)
        loops = [] if plan["fixed"] else ["k"]  # the float transform's normalisation
        return ctx.render("signal_irfft.c.j2", frames=frames, variables=_variables(frames, plan, *loops), **plan)
