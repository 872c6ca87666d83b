"""int16 LOGISTIC and TANH as piecewise-linear tables built at compile time, bit-exact with TFLM.

TFLM's int16 kernels (reference_integer_ops::Logistic and Tanh) rescale the input to
``v = (x * multiplier + rounding) >> shift`` (units of 1/(3 * 4096)), take its magnitude, look up
TFLM's 256-entry sigmoid table at ``|v| >> 9`` (TANH: ``>> 8``) and interpolate linearly with the
low bits, mirror the result for negative ``v`` and shift it down to 16 bits. Within one segment of
``v`` (``v >> 9``, taken with the sign: arithmetic shift) all of that is one straight line followed
by the final shift, mirror included; so the output is

    out = (base[v >> B] + (v & (2^B - 1)) * slope[v >> B]) >> K        (B = 9, K = 10 for LOGISTIC)

with ``base`` and ``slope`` fitted here for every signed segment the int16 input range reaches
(at most 512), from TFLM's arithmetic (``logistic_int16_reference``, ``tanh_int16_reference``:
TFLM's integer steps in numpy). Where the input range passes the saturation point the rescaled
input is clamped first (every segment beyond is constant). The fit is checked on every one of the
65,536 int16 inputs before a table is used; per element the generated loop is a multiply-add,
two shifts, two table loads and a multiply-add, without TFLM's absolute value, saturation branch
and mirror.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

ALL_INT16 = np.arange(-(2**15), 2**15, dtype=np.int64)


@dataclass(frozen=True)
class PiecewiseTable:
    """``out = (base[s - first] + f * slope[s - first]) >> out_shift`` for the segment
    ``s = t >> (shift + segment_bits)`` and ``f = (t >> shift) & (2^segment_bits - 1)`` of
    ``t = x * multiplier + rounding``, clamped to ``[clamp_min, clamp_max]`` when set."""

    multiplier: int
    shift: int
    segment_bits: int
    out_shift: int
    first: int  # the lowest segment index
    base: np.ndarray  # int32
    slope: np.ndarray  # int16
    clamp: tuple[int, int] | None  # bounds of t (the rescaled input before its shift), or None

    @property
    def clamp_bits(self) -> int | None:
        """The clamp as a saturation to a signed range of this many bits (its bounds are
        -2^(n-1) and 2^(n-1) - 1), or None."""
        if self.clamp is None:
            return None
        bits = (-self.clamp[0]).bit_length()
        assert self.clamp == (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) and bits <= 31
        return bits

    @property
    def rounding(self) -> int:
        return (1 << (self.shift - 1)) if self.shift > 0 else 0

    def rescaled(self, x: np.ndarray) -> np.ndarray:
        t = np.asarray(x, dtype=np.int64) * self.multiplier + self.rounding
        return np.clip(t, *self.clamp) if self.clamp else t

    def apply(self, x: np.ndarray) -> np.ndarray:
        """What the generated loop computes, for int16 inputs."""
        t = self.rescaled(x)
        segment = (t >> (self.shift + self.segment_bits)) - self.first
        fraction = (t >> self.shift) & ((1 << self.segment_bits) - 1)
        out = (self.base.astype(np.int64)[segment] + fraction * self.slope.astype(np.int64)[segment]) >> self.out_shift
        return out.astype(np.int16)


def _rescale(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    return (np.asarray(x, dtype=np.int64) * multiplier + rounding) >> shift


def _sigmoid_table() -> np.ndarray:
    from microcompiler.ops.softmax_logistic import SIGMOID_TABLE_UINT16

    return np.array(SIGMOID_TABLE_UINT16, dtype=np.int64)


# ---- TFLM's arithmetic, as functions of the rescaled input v ------------------------------------


def logistic_int16_of_rescaled(v: np.ndarray) -> np.ndarray:
    """reference_integer_ops::Logistic (int16) after the input rescaling: the 16-bit output for v."""
    table = _sigmoid_table()
    magnitude = np.abs(v)
    segment = magnitude >> 9
    inside = np.minimum(segment, 254)
    a, b = table[inside], table[inside + 1]
    result = np.where(segment >= 255, 0x7FFF << 10, (a << 9) + (magnitude & 0x1FF) * (b - a))
    result = np.where(v >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return (result >> 10).astype(np.int16)


def tanh_int16_of_rescaled(v: np.ndarray) -> np.ndarray:
    """reference_integer_ops::Tanh (int16) after the input rescaling: the 16-bit output for v."""
    table = _sigmoid_table()
    magnitude = np.abs(v)
    segment = magnitude >> 8
    inside = np.minimum(segment, 254)
    a, b = table[inside], table[inside + 1]
    result = np.where(segment >= 255, 0xFFFF << 8, (a << 8) + (magnitude & 0xFF) * (b - a))
    result = np.where(v >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    return (result >> 8).astype(np.int16)


def logistic_int16_reference(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    return logistic_int16_of_rescaled(_rescale(x, multiplier, shift))


def tanh_int16_reference(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    return tanh_int16_of_rescaled(_rescale(x, multiplier, shift))


# (function of v, segment bits, output shift, |v| from which every output is saturated)
FUNCTIONS = {
    "logistic": (logistic_int16_of_rescaled, 9, 10, 255 << 9),
    "tanh": (tanh_int16_of_rescaled, 8, 8, 255 << 8),
}


def _fit_segment(outputs: np.ndarray, out_shift: int) -> tuple[int, int] | None:
    """(base, slope) with ``(base + f * slope) >> out_shift == outputs[f]`` for every f, or None."""
    f = np.arange(outputs.size, dtype=np.int64)
    low = outputs.astype(np.int64) << out_shift
    high = low + (1 << out_shift) - 1
    guess = int(round(float(low[-1] - low[0]) / max(outputs.size - 1, 1)))
    for slope in sorted({guess + d for d in range(-4, 5)} | {0}, key=lambda s: abs(s - guess)):
        lo, hi = int(np.max(low - f * slope)), int(np.min(high - f * slope))
        if lo <= hi and -(2**15) <= slope < 2**15:
            return lo, slope
    return None


@lru_cache(maxsize=64)
def piecewise_table(function: str, multiplier: int, shift: int) -> PiecewiseTable | None:
    """The piecewise-linear table of TFLM's int16 ``function`` ("logistic" or "tanh") for this input
    rescaling, or None where no exact fit exists (the caller keeps TFLM's own loop)."""
    of_rescaled, bits, out_shift, saturation = FUNCTIONS[function]
    v = _rescale(ALL_INT16, multiplier, shift)
    reach = 1 << (bits + 8)  # 256 segments of magnitude: beyond them, every output is saturated
    assert saturation < reach
    clamp = None
    if v[0] < -reach or v[-1] >= reach:
        clamp = (-(reach << shift), (reach << shift) - 1)  # t bounds giving v in [-reach, reach - 1]
    first, last = int(max(v[0], -reach)) >> bits, int(min(v[-1], reach - 1)) >> bits
    base, slope = [], []
    for segment in range(first, last + 1):
        values = np.arange(segment << bits, (segment + 1) << bits, dtype=np.int64)
        fit = _fit_segment(of_rescaled(values), out_shift)
        if fit is None:
            return None
        base.append(fit[0])
        slope.append(fit[1])
    if max(abs(b) + (1 << bits) * abs(s) for b, s in zip(base, slope)) >= 2**31:
        return None
    table = PiecewiseTable(
        multiplier,
        shift,
        bits,
        out_shift,
        first,
        np.array(base, dtype=np.int32),
        np.array(slope, dtype=np.int16),
        clamp,
    )
    want = of_rescaled(v)
    if not np.array_equal(table.apply(ALL_INT16), want):
        return None
    return table


def render_piecewise_table(ctx, table: PiecewiseTable, size: int, input: str, output: str, what: str) -> str:
    """The two arrays in flash and the loop over them (templates/piecewise_int16.c.j2)."""
    n = table.base.size
    base = ctx.const(
        "segment_base",
        table.base,
        "int32_t",
        f"{ctx.op.kind} operator {ctx.op.index}: {what}, line offset of each of {n} input segments",
    )
    slope = ctx.const(
        "segment_slope",
        table.slope,
        "int16_t",
        f"{ctx.op.kind} operator {ctx.op.index}: {what}, line slope of each of {n} input segments",
    )
    ctx.variant = {"variant": "piecewise-table", "scratch_bytes": 0}
    return ctx.render(
        "piecewise_int16.c.j2",
        size=size,
        input=input,
        output=output,
        what=what,
        multiplier=table.multiplier,
        rounding=table.rounding,
        shift=table.shift,
        bits=table.segment_bits,
        mask=(1 << table.segment_bits) - 1,
        out_shift=table.out_shift,
        first=table.first,
        segments=n,
        clamp_bits=table.clamp_bits,
        base=base,
        slope=slope,
    )
