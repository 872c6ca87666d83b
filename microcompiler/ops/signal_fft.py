"""``SignalRfft``: TFLM's real FFT (a custom operator of audio front ends), int16 and float32.

TFLM computes it with KISS FFT: the n/2-point complex transform of the frame's sample pairs, then
a split into n/2 + 1 bins. The int16 build is fixed point (Q15 twiddles, each stage scales by
1/radix, so the bins come out divided by n); the generated code follows the same arithmetic and
the same decomposition (radix 4, then a radix 2 if n/2 is not a power of 4) bit for bit. The
transform length must be a power of two (every audio front end uses one); the frame (the last
input dimension, zero-padded) must not be longer. The radix-digit order of the input and the
twiddles are computed here; the butterflies are crt's kernel_fft.h.
"""
from __future__ import annotations

import numpy as np

from microcompiler.errors import UnsupportedModelError
from microcompiler.ops import custom_options as opt
from microcompiler.ops.base import OpKernel, register, require

# TFLite's TensorType numbers, as the converter writes them into the option 'T'
_TENSOR_TYPES = {"float32": 0, "int32": 2, "int16": 7}
_Q15_MAX = 32767


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
    """exp(i * phase) as (real, imaginary) pairs: Q15 rounded half up, or float32."""
    pairs = np.stack([np.cos(phases), np.sin(phases)], axis=1).reshape(-1)
    if dtype == "int16":
        return np.floor(0.5 + _Q15_MAX * pairs).astype(np.int16)
    return pairs.astype(np.float32)


@register
class Rfft(OpKernel):
    kinds = ("SignalRfft",)
    types = ("int16", "float32")
    type_notes = "input and output of the same type; output (n/2 + 1) complex bins per frame; n a power of two"
    options = "custom (flexbuffer): T, fft_length"
    quantized_io = False

    def _geometry(self, op, graph):
        opt.exact_keys(op, ("T", "fft_length"))
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(x.dtype == y.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        if x.dtype == "int32":
            raise UnsupportedModelError(f"operator {op.index} ({op.kind}): the int32 transform is not supported "
                                        "yet (int16, float32)")
        require(x.dtype in self.types, op, f"type {x.dtype} is not supported (int16, float32)")
        require(opt.integer(op, "T") == _TENSOR_TYPES[x.dtype], op,
                f"option T {opt.integer(op, 'T')} does not name the tensors' type {x.dtype}")
        n = opt.integer(op, "fft_length")
        require(n >= 4 and n & (n - 1) == 0, op, f"fft_length {n} is not supported yet (a power of two, 4 or more)")
        require(len(x.shape) >= 1 and len(y.shape) == len(x.shape), op,
                f"input shape {list(x.shape)} and output shape {list(y.shape)} must have the same rank")
        length = int(x.shape[-1])
        require(1 <= length <= n, op, f"frames of {length} samples do not fit the {n}-point transform")
        require(list(y.shape[:-1]) == list(x.shape[:-1]) and y.shape[-1] == n + 2, op,
                f"output shape {list(y.shape)} must be {list(x.shape[:-1]) + [n + 2]} ({n // 2 + 1} complex bins "
                "per frame)")
        return x.size // length, length, n

    def check(self, op, graph):
        self._geometry(op, graph)

    def macs(self, op, graph):
        frames, _, n = self._geometry(op, graph)
        return frames * 2 * n * int(np.log2(n))

    def emit(self, op, graph, ctx):
        frames, length, n = self._geometry(op, graph)
        dtype = graph.tensors[op.inputs[0]].dtype
        half = n // 2
        factors = kiss_factors(half)
        order = np.array(digit_order(factors), np.int16 if half <= 1 << 15 else np.int32)
        suffix = "16" if dtype == "int16" else "f"
        return ctx.render(
            "signal_rfft.c.j2", ctype="int16_t" if dtype == "int16" else "float", suffix=suffix,
            input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]), frames=frames, length=length, n=n,
            half=half, order=ctx.const("digit_order", order), stages=stages(factors),
            twiddles=ctx.const("twiddles", twiddles(-2 * np.pi * np.arange(half) / half, dtype)),
            super_twiddles=ctx.const("super_twiddles",
                                     twiddles(-np.pi * ((np.arange(half // 2) + 1) / half + 0.5), dtype)),
            zero="0" if dtype == "int16" else "0.0f")
