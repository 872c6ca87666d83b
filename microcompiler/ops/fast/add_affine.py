"""int8 ADD and SUB as one affine function of the raw inputs: the "affine" kernel (template
add_affine.c.j2), 2 multiply-accumulates and a saturating shift per element instead of TFLM's three
rescalings.

TFLM's int8 ADD (SUB) of the inputs x1, x2 is
    y = clamp(R_o(R_1((x1 - z1) << 20) +- R_2((x2 - z2) << 20)) + z_o)
with R_k(v) = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(v, M_k), -shift_k). Its result
depends only on the pair (x1, x2), 65,536 pairs in all, so a cheaper formula is exact if it agrees
with TFLM on every pair, which the compiler checks here exhaustively. The formula is
    y = clamp((w1 * x1 + w2 * x2 + bias) >> shift)
(arithmetic shift, i.e. floor division by 2^shift; the clamp is SSAT #8 on the DSP cores): for each
output value y0 not at a clamp bound, the pairs giving y0 must satisfy
    y0 * 2^shift <= w1 * x1 + w2 * x2 + bias < (y0 + 1) * 2^shift,
only one side of it at a clamp bound. For fixed (w1, w2, shift) those inequalities bound ``bias`` to
an interval; the search tries the weights nearest to TFLM's effective slopes (the products of the
quantized multipliers) from the largest shift the int32 accumulator allows down, and takes the
middle of the first non-empty interval. TFLM's double rounding makes the exact function only nearly
affine: for some scales no weights fit (e.g. input scales 1000x apart) and the SMMLAR variant stays.
"""

from __future__ import annotations

import functools

import numpy as np

from microcompiler.ops.plan import Variant

AFFINE = Variant("affine")  # int8 ADD/SUB as one affine function of the two inputs (this module)
INT32_LIMIT = 1 << 31
_SHIFTS = range(26, 11, -1)  # tried from the most precise down
_WEIGHT_RADIUS = 2  # weights tried around the effective slopes: +-2 each
_SAMPLE_STEP = 61  # every 61st pair (1,075 of them; 61 is prime, so the sample crosses both inputs)
UNROLL = 8  # elements per step of the contiguous loop (MC_ADD_AFFINE_S8 runs 8)


def _doubling_high_mul(x: np.ndarray, multiplier: int) -> np.ndarray:
    """TFLM's SaturatingRoundingDoublingHighMul for multiplier > 0 (no saturation case), int64."""
    product = x * multiplier
    nudged = product + np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    return np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C's truncating division


def _rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    mask = (1 << exponent) - 1
    return (x >> exponent) + ((x & mask) > ((mask >> 1) + (x < 0)))


def _requantize(x: np.ndarray, q: tuple[int, int]) -> np.ndarray:
    """mc_requantize for a right shift (q = (multiplier, shift <= 0))."""
    return _rounding_divide_by_pot(_doubling_high_mul(x, q[0]), -q[1])


def tflm_int8_add(
    x1: np.ndarray, x2: np.ndarray, q: dict, zero_points: tuple[int, int, int], act: tuple[int, int], subtract: bool
) -> np.ndarray:
    """TFLM's int8 ADD (SUB) of int64 arrays x1, x2 with the requantization of Add.requantization."""
    z1, z2, zo = zero_points
    s1 = _requantize((x1 - z1) << q["left_shift"], q["input1_q"])
    s2 = _requantize((x2 - z2) << q["left_shift"], q["input2_q"])
    return np.clip(_requantize(s1 - s2 if subtract else s1 + s2, q["output_q"]) + zo, act[0], act[1])


@functools.cache
def _all_pairs() -> tuple[np.ndarray, np.ndarray]:
    x1, x2 = np.meshgrid(np.arange(-128, 128, dtype=np.int64), np.arange(-128, 128, dtype=np.int64), indexing="ij")
    return x1.ravel(), x2.ravel()


def affine_add(q: dict, zero_points: tuple[int, int, int], act: tuple[int, int], subtract: bool) -> dict | None:
    """{"weight1", "weight2", "bias", "shift"} of the affine formula equal to TFLM's int8 ADD (SUB)
    on all 65,536 input pairs with no int32 overflow, or None when the search finds none."""
    return _search(
        tuple(q["input1_q"]),
        tuple(q["input2_q"]),
        tuple(q["output_q"]),
        q["left_shift"],
        tuple(zero_points),
        tuple(act),
        subtract,
    )


@functools.lru_cache(maxsize=256)
def _search(q1, q2, qo, left_shift, zero_points, act, subtract):
    if not all(m > 0 and s <= 0 for m, s in (q1, q2, qo)):
        return None
    x1, x2 = _all_pairs()
    q = dict(input1_q=q1, input2_q=q2, output_q=qo, left_shift=left_shift)
    y = tflm_int8_add(x1, x2, q, zero_points, act, subtract)
    lo, hi = act
    free_below, free_above = y == lo, y == hi  # clamped: one side of the interval is free
    out_scale = qo[0] * 2.0 ** (qo[1] - 31)
    slope1 = (1 << left_shift) * q1[0] * 2.0 ** (q1[1] - 31) * out_scale
    slope2 = (-1 if subtract else 1) * (1 << left_shift) * q2[0] * 2.0 ** (q2[1] - 31) * out_scale
    offsets = np.arange(-_WEIGHT_RADIUS, _WEIGHT_RADIUS + 1)
    # A sample of the pairs rejects most candidates first: its interval contains the full one, so an
    # empty interval on the sample is empty on all 65,536 pairs (the search is exact all the same).
    sx1, sx2, sy = x1[::_SAMPLE_STEP], x2[::_SAMPLE_STEP], y[::_SAMPLE_STEP]
    s_below, s_above = free_below[::_SAMPLE_STEP], free_above[::_SAMPLE_STEP]
    for shift in _SHIFTS:
        unit = 1 << shift
        for w1 in int(round(slope1 * unit)) + offsets:
            for w2 in int(round(slope2 * unit)) + offsets:
                s_acc = int(w1) * sx1 + int(w2) * sx2
                s_lower = np.where(s_below, -INT32_LIMIT, sy * unit - s_acc).max()
                s_upper = np.where(s_above, INT32_LIMIT, (sy + 1) * unit - 1 - s_acc).min()
                # the biases that overflow no sum (w1 * x1 + bias, then + w2 * x2; every corner pair is
                # among the 65,536) form an interval
                term1 = (int(w1) * -128, int(w1) * 127)
                term2 = (int(w2) * -128, int(w2) * 127)
                low_sum = min(term1) + min(0, min(term2))
                high_sum = max(term1) + max(0, max(term2))
                if max(s_lower, -INT32_LIMIT - low_sum) > min(s_upper, INT32_LIMIT - 1 - high_sum):
                    continue
                acc = int(w1) * x1 + int(w2) * x2
                lower = np.where(free_below, -INT32_LIMIT, y * unit - acc).max()
                upper = np.where(free_above, INT32_LIMIT, (y + 1) * unit - 1 - acc).min()
                if lower > upper:
                    continue
                bias = int((lower + upper) // 2)
                # C adds the input1 term to the bias first: no overflow there or after the input2 term
                if -INT32_LIMIT - low_sum <= bias <= INT32_LIMIT - 1 - high_sum:
                    return {"weight1": int(w1), "weight2": int(w2), "bias": bias, "shift": shift}
    return None


def emit_affine(
    ctx,
    plan: dict,
    op_name: str,
    act: tuple[int, int],
    loops,
    idx1: str,
    idx2: str,
    out_idx: str,
    input1: str,
    input2: str,
    output: str,
) -> str:
    """The C of the affine kernel. Inputs of the output's shape (one loop with every index ``i``)
    run 8 elements per step through pointers (MC_ADD_AFFINE_S8 with SSAT); broadcasting keeps the loop nest of
    ``broadcast_loops``."""
    contiguous = len(loops) == 1 and idx1 == idx2 == out_idx == loops[0][0] == "i"
    size = loops[0][1] if contiguous else 0
    return ctx.render(
        "add_affine.c.j2",
        op=op_name,
        act_min=act[0],
        act_max=act[1],
        loops=loops,
        idx1=idx1,
        idx2=idx2,
        out_idx=out_idx,
        input1=input1,
        input2=input2,
        output=output,
        unroll=UNROLL if size >= UNROLL else 0,
        size=size,
        **plan,
    )
