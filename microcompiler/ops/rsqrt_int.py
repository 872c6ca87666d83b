"""Integer RSQRT, bit-exact with TFLM: an int8 table, and int16 from the nearest integer of 1/sqrt.

TFLM's integer RSQRT (``elementwise.cc``) computes ``1/sqrt(x - zp_in)`` with a fixed-point Newton
iteration (``GetInvSqrtQuantizedMultiplierExp``: five steps, about 440 instructions per element on the
Cortex-M4), keeps it in Q20 (``q``) and rescales that to the output. ``q`` does not depend on the
scales, and it is the integer nearest to ``2^20 / sqrt(x)`` for all but a few inputs (the Newton
result lands on the other side of a rounding boundary: ``inv_sqrt_q20_tflm`` against
``inv_sqrt_q20_nearest``, 17 inputs of 1..32,767).

* int8: the 256 outputs computed here at compile time, a table (ops/lut.py).
* int16 on cores with an FPU (``sqrt-guess``): per element a float guess ``2^20 / sqrtf(x)`` (within
  one of the nearest integer: IEEE division and square root), corrected exactly by integer
  comparisons, ``mc_inv_sqrt_q20_nearest`` (kernel_elementwise.h), then TFLM's output rescaling
  (``mc_requant_fast``, SMMLAR, where ``q`` shifted left by the rescaling stays below 2^30). The
  inputs whose output differs from TFLM's that way at the operator's scales (found on every positive
  int16 input at compile time: ``int16_exceptions``) take TFLM's output from a small table, a hash of
  the input (``x % n``) into ``n`` slots; more than MAX_EXCEPTIONS of them keep TFLM's loop.

Tables of all the int16 outputs were tried and not kept (docs/benchmarks.md): the output takes
1,700-12,700 distinct values at the scales a converter gives (1/sqrt of the smallest variance near
the int16 maximum), so an exact table needs about as many entries (10-70 KB as octave segments of at
most one step, 600-2,100 fitted lines).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from microcompiler.ops.plan import ISA_FPU, KernelPlan, Variant

SQRT_GUESS = Variant("sqrt-guess", headers=("kernel_elementwise.h", "kernel_simd.h"))
Q20 = 20  # TFLM keeps 1/sqrt(x) in Q(31 - 20) between its two rescalings (RSQRT_HEADROOM_SHIFT)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_EXCEPTIONS = 64

# ---- TFLM's arithmetic on int64 arrays holding int32 values (ops/fixedpoint.py, vectorised) ------


def _floor_log2(x):
    """floor(log2(x)) of positive integers (exact: frexp's exponent)."""
    return np.frexp(np.asarray(x, dtype=np.float64))[1].astype(np.int64) - 1


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x + 2**31) & (2**32 - 1)) - 2**31


def _sat_rounding_doubling_high_mul(a: np.ndarray, b) -> np.ndarray:
    ab = a * b
    n = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    q = np.where(n >= 0, n >> 31, -((-n) >> 31))  # C's division: truncation toward zero
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, q)


def _rounding_divide_by_pot(x: np.ndarray, exponent) -> np.ndarray:
    mask = (np.int64(1) << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def _saturating_left_shift(x: np.ndarray, exponent: int) -> np.ndarray:
    return np.clip(x << exponent, INT32_MIN, INT32_MAX)


def _requantize(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """mc_requantize (TFLM's MultiplyByQuantizedMultiplier); shift may be an array."""
    shift = np.asarray(shift, dtype=np.int64)
    shifted = _wrap32(x << np.maximum(shift, 0))
    return _rounding_divide_by_pot(_sat_rounding_doubling_high_mul(shifted, multiplier), np.maximum(-shift, 0))


def _inv_sqrt_multiplier(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mc_inv_sqrt_multiplier (TFLM's GetInvSqrtQuantizedMultiplierExp, reverse shift -1) for
    0 < x < 2^29: (multiplier, shift)."""
    assert (x > 1).all() and (x < 1 << 29).all()
    clz = 31 - _floor_log2(x)
    pairs = (clz - 1) // 2 - 1
    right_shift = 11 - pairs
    half_input = _rounding_divide_by_pot((x << (2 * pairs)) >> 1, 1)  # Q3
    one_q3, three_halves_q3 = 1 << 28, (1 << 28) + (1 << 27)
    mul = _sat_rounding_doubling_high_mul
    r = np.full_like(x, one_q3)
    for _ in range(5):
        r3 = _saturating_left_shift(mul(mul(r, r), r), 6)
        r = _saturating_left_shift(_wrap32(mul(np.full_like(r, three_halves_q3), r) - mul(half_input, r3)), 3)
    result = mul(r, np.int64(1518500250))  # sqrt(2)/2 in Q0
    result = np.where(right_shift < 0, _wrap32(result << np.maximum(-right_shift, 0)), result)
    return result, -np.maximum(right_shift, 0)


def inv_sqrt_q20_tflm(x: np.ndarray) -> np.ndarray:
    """1/sqrt(x) in Q20 as TFLM's integer RSQRT has it between its two rescalings, for 0 < x < 2^29:
    mc_requantize(1, mc_inv_sqrt_multiplier(x), its shift + 20)."""
    x = np.asarray(x, dtype=np.int64)
    q = np.full(x.shape, 0, dtype=np.int64)
    q[x == 1] = _requantize(np.array(1, dtype=np.int64), INT32_MAX, Q20)
    many = x > 1
    inv_sqrt, inv_shift = _inv_sqrt_multiplier(x[many])
    q[many] = _requantize(np.ones_like(inv_sqrt), inv_sqrt, inv_shift + Q20)
    return q


def inv_sqrt_q20_nearest(x: np.ndarray) -> np.ndarray:
    """What mc_inv_sqrt_q20_nearest computes: the integer nearest to 2^20 / sqrt(x), for 0 < x < 2^16."""
    x = np.asarray(x, dtype=np.int64)
    guess = (np.float32(1 << Q20) / np.sqrt(x.astype(np.float32)) + np.float32(0.5)).astype(np.int64)
    limit = 1 << (2 * Q20 + 2)
    up = (2 * guess + 1) ** 2 * x <= limit
    down = (2 * guess - 1) ** 2 * x > limit
    return guess + up - down


def rsqrt_output(q20: np.ndarray, multiplier: int, shift: int, out_zp: int, dtype: str) -> np.ndarray:
    """The second rescaling of TFLM's integer RSQRT: Q20 -> the output type."""
    lo, hi = (-128, 127) if dtype == "int8" else (-(2**15), 2**15 - 1)
    return np.clip(_requantize(q20, multiplier, shift - Q20) + out_zp, lo, hi)


def rsqrt_reference(x: np.ndarray, multiplier: int, shift: int, out_zp: int, dtype: str) -> np.ndarray:
    """TFLM's integer RSQRT of x = input - input zero point (templates/elementwise_unary_rsqrt_int.c.j2),
    the output rescaling (multiplier, shift) = 1 / (sqrt(input scale) * output scale); x <= 0 gives
    the type's maximum."""
    x = np.asarray(x, dtype=np.int64)
    top = 127 if dtype == "int8" else 2**15 - 1
    out = np.full(x.shape, top, dtype=np.int64)
    positive = x > 0
    out[positive] = rsqrt_output(inv_sqrt_q20_tflm(x[positive]), multiplier, shift, out_zp, dtype)
    return out


def rsqrt_int8_table(in_zp: int, multiplier: int, shift: int, out_zp: int) -> np.ndarray:
    """The int8 table (indexed by the input byte) of TFLM's RSQRT."""
    x = np.arange(-128, 128, dtype=np.int64)
    table = np.zeros(256, dtype=np.int8)
    table[x & 0xFF] = rsqrt_reference(x - in_zp, multiplier, shift, out_zp, "int8")
    return table


@lru_cache(maxsize=32)
def int16_exceptions(multiplier: int, shift: int) -> tuple[tuple[int, int], ...]:
    """(input, TFLM's output) where the nearest-integer Q20 gives another int16 output (zero points 0)."""
    x = np.arange(1, 2**15, dtype=np.int64)
    want = rsqrt_output(inv_sqrt_q20_tflm(x), multiplier, shift, 0, "int16")
    got = rsqrt_output(inv_sqrt_q20_nearest(x), multiplier, shift, 0, "int16")
    return tuple((int(x[i]), int(want[i])) for i in np.flatnonzero(want != got))


def exception_slots(multiplier: int, shift: int) -> int | None:
    """The smallest n at which the exceptions' inputs x % n are distinct (1 when there are none), or
    None: too many exceptions (TFLM's loop then)."""
    inputs = [x for x, _ in int16_exceptions(multiplier, shift)]
    for n in range(max(1, len(inputs)), MAX_EXCEPTIONS * 4):
        if len(inputs) <= MAX_EXCEPTIONS and len({x % n for x in inputs}) == len(inputs):
            return n
    return None


def sqrt_guess_plan() -> KernelPlan:
    return KernelPlan(SQRT_GUESS, ISA_FPU, scratch_bytes=0)


def render_sqrt_guess(ctx, size: int, input: str, output: str, multiplier: int, shift: int) -> str:
    """The int16 loop (templates/rsqrt_int16_guess.c.j2); exception_slots must not be None."""
    exceptions = int16_exceptions(multiplier, shift)
    n = exception_slots(multiplier, shift)
    assert n is not None
    keys, values = np.zeros(n, dtype=np.int16), np.zeros(n, dtype=np.int16)  # key 0: no input (x > 0)
    for x, out in exceptions:
        keys[x % n], values[x % n] = x, out
    names = {}
    if exceptions:
        what = f"{ctx.op.kind} operator {ctx.op.index}"
        names["keys"] = ctx.const(
            "exception_input", keys, "int16_t", f"{what}: inputs whose output TFLM rounds otherwise, at x % {n}"
        )
        names["values"] = ctx.const("exception_output", values, "int16_t", f"{what}: TFLM's output for them")
    ctx.plan = sqrt_guess_plan()
    left, right = max(shift - Q20, 0), max(Q20 - shift, 0)
    return ctx.render(
        "rsqrt_int16_guess.c.j2",
        size=size,
        input=input,
        output=output,
        multiplier=multiplier,
        shift=shift - Q20,
        # mc_requant_fast (SMMLAR) is TFLM's rescaling for 0 < 2 * (q << left) < 2^31: q <= 2^20
        fast=(1 << (Q20 + 1 + left)) < 2**31,
        left=left,
        right=right,
        rounding=(1 << (right - 1)) if right else 0,
        slots=n,
        exceptions=len(exceptions),
        **names,
    )
