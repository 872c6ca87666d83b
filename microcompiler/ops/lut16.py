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

from microcompiler.ops.features import has_mve
from microcompiler.ops.plan import ISA_MVE, KernelPlan, Variant

PIECEWISE_TABLE = Variant("piecewise-table")  # int16 LOGISTIC and TANH: this module's fitted lines
# the same lines 4 elements at a time on Helium (gathers from the two tables)
MVE_PIECEWISE_TABLE = Variant("mve-piecewise-table", headers=("kernel_mve_tables.h",))
SIGMOID_TABLE = Variant("sigmoid-table")  # int16 LOGISTIC and TANH: TFLM's interpolated sigmoid table

ALL_INT16 = np.arange(-(2**15), 2**15, dtype=np.int64)

# TFLM's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h, Apache-2.0): sigmoid(i / 24)
# in unsigned 0.16 fixed point, used by the int16 LOGISTIC reference kernel. The values are not a
# plain rounding of the formula (about 40 entries are one higher), so they are kept as data: the
# kernel must use exactly these numbers to be bit-exact.
SIGMOID_TABLE_UINT16 = (
    32768,
    33451,
    34133,
    34813,
    35493,
    36169,
    36843,
    37513,
    38180,
    38841,
    39498,
    40149,
    40794,
    41432,
    42064,
    42688,
    43304,
    43912,
    44511,
    45102,
    45683,
    46255,
    46817,
    47369,
    47911,
    48443,
    48964,
    49475,
    49975,
    50464,
    50942,
    51409,
    51865,
    52311,
    52745,
    53169,
    53581,
    53983,
    54374,
    54755,
    55125,
    55485,
    55834,
    56174,
    56503,
    56823,
    57133,
    57433,
    57724,
    58007,
    58280,
    58544,
    58800,
    59048,
    59288,
    59519,
    59743,
    59959,
    60168,
    60370,
    60565,
    60753,
    60935,
    61110,
    61279,
    61441,
    61599,
    61750,
    61896,
    62036,
    62172,
    62302,
    62428,
    62549,
    62666,
    62778,
    62886,
    62990,
    63090,
    63186,
    63279,
    63368,
    63454,
    63536,
    63615,
    63691,
    63765,
    63835,
    63903,
    63968,
    64030,
    64090,
    64148,
    64204,
    64257,
    64308,
    64357,
    64405,
    64450,
    64494,
    64536,
    64576,
    64614,
    64652,
    64687,
    64721,
    64754,
    64786,
    64816,
    64845,
    64873,
    64900,
    64926,
    64950,
    64974,
    64997,
    65019,
    65039,
    65060,
    65079,
    65097,
    65115,
    65132,
    65149,
    65164,
    65179,
    65194,
    65208,
    65221,
    65234,
    65246,
    65258,
    65269,
    65280,
    65291,
    65301,
    65310,
    65319,
    65328,
    65337,
    65345,
    65352,
    65360,
    65367,
    65374,
    65381,
    65387,
    65393,
    65399,
    65404,
    65410,
    65415,
    65420,
    65425,
    65429,
    65433,
    65438,
    65442,
    65445,
    65449,
    65453,
    65456,
    65459,
    65462,
    65465,
    65468,
    65471,
    65474,
    65476,
    65479,
    65481,
    65483,
    65485,
    65488,
    65489,
    65491,
    65493,
    65495,
    65497,
    65498,
    65500,
    65501,
    65503,
    65504,
    65505,
    65507,
    65508,
    65509,
    65510,
    65511,
    65512,
    65513,
    65514,
    65515,
    65516,
    65517,
    65517,
    65518,
    65519,
    65520,
    65520,
    65521,
    65522,
    65522,
    65523,
    65523,
    65524,
    65524,
    65525,
    65525,
    65526,
    65526,
    65526,
    65527,
    65527,
    65528,
    65528,
    65528,
    65529,
    65529,
    65529,
    65529,
    65530,
    65530,
    65530,
    65530,
    65531,
    65531,
    65531,
    65531,
    65531,
    65532,
    65532,
    65532,
    65532,
    65532,
    65532,
    65533,
    65533,
    65533,
    65533,
    65533,
    65533,
    65533,
    65533,
    65534,
    65534,
    65534,
    65534,
    65534,
    65534,
    65534,
    65534,
    65534,
    65534,
    65535,
)


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
    return np.array(SIGMOID_TABLE_UINT16, dtype=np.int64)


# ---- TFLM's arithmetic, as functions of the rescaled input v ------------------------------------


def _interpolated(v: np.ndarray, bits: int, saturated: int) -> np.ndarray:
    """TFLM's interpolation in its sigmoid table at |v| (segment |v| >> bits, the low bits the
    weight), or ``saturated`` from segment 255 on: the value both kernels mirror and shift."""
    table = _sigmoid_table()
    magnitude = np.abs(v)
    segment = magnitude >> bits
    inside = np.minimum(segment, 254)
    a, b = table[inside], table[inside + 1]
    return np.where(segment >= 255, saturated, (a << bits) + (magnitude & ((1 << bits) - 1)) * (b - a))


def logistic_int16_of_rescaled(v: np.ndarray) -> np.ndarray:
    """reference_integer_ops::Logistic (int16) after the input rescaling: the 16-bit output for v."""
    result = _interpolated(v, 9, 0x7FFF << 10)
    result = np.where(v >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return (result >> 10).astype(np.int16)


def tanh_int16_of_rescaled(v: np.ndarray) -> np.ndarray:
    """reference_integer_ops::Tanh (int16) after the input rescaling: the 16-bit output for v."""
    result = _interpolated(v, 8, 0xFFFF << 8)
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


def piecewise_plan(mve: bool, scratch_bytes: int | None = None) -> KernelPlan:
    """The lines' plan: on Helium cores (mve) 4 elements at a time."""
    return (
        KernelPlan(MVE_PIECEWISE_TABLE, ISA_MVE, scratch_bytes=scratch_bytes)
        if mve
        else KernelPlan(PIECEWISE_TABLE, scratch_bytes=scratch_bytes)
    )


def render_piecewise_table(
    ctx, table: PiecewiseTable, size: int, input: str, output: str, what: str, mve: bool = False
) -> str:
    """The two arrays in flash and the loop over them (templates/piecewise_int16.c.j2; on Helium
    cores mc_piecewise_s16_run of kernel_mve_tables.h: templates/piecewise_int16_mve.c.j2)."""
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
    ctx.plan = piecewise_plan(mve, scratch_bytes=0)
    return ctx.render(
        "piecewise_int16_mve.c.j2" if mve else "piecewise_int16.c.j2",
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
        clamp=table.clamp,
        base=base,
        slope=slope,
    )


def render_sigmoid_family_int16(ctx, what: str, multiplier: int, shift: int, template: str, **values) -> str:
    """int16 LOGISTIC and TANH: the exact piecewise-linear table where one fits (unless the tuning
    asks for the reference), else TFLM's own loop over its interpolated sigmoid table (``template``)."""
    lines = None if ctx.reference_only else piecewise_table(what, multiplier, shift)
    if lines:
        return render_piecewise_table(ctx, lines, what=what, mve=has_mve(ctx.features), **values)
    ctx.plan = KernelPlan(SIGMOID_TABLE, scratch_bytes=0)  # TFLM's own loop
    table = ctx.const("sigmoid_table", np.array(SIGMOID_TABLE_UINT16, dtype=np.uint16), "uint16_t")
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    return ctx.render(template, multiplier=multiplier, shift=shift, table=table, rounding=rounding, **values)
