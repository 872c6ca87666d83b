"""DEPTHWISE_CONV_2D, int8, the "planes" fast kernel (template depthwise_conv_2d_planes.c.j2) for
every shape (any depth multiplier, channel count, kernel, stride and dilation). The plan is
DepthwiseConv2D.kernel_plan in ops/depthwise_conv_2d.py.

One input channel at a time is sign-extended into a plane of int16 (kernel scratch) with a border
of the input zero point wide enough for every tap, so the loop over output pixels needs no bounds
test; the zero point's products are folded into the bias. Each of the depth_multiplier output
channels of that input channel then runs over the plane with its weights and requantization
constants in registers: pairs of horizontally adjacent taps per SMLAD, and with stride 1 and no
horizontal dilation two output pixels per step sharing the loads (SMLAD for the left pixel,
SMLATB/SMLABT for the right one). Weights stay int8 in flash (one row of kernel_h * kernel_w per
output channel), paired at run time once per channel. A layer whose all-zero output channels were
dropped (passes/zero_channels.py) runs each remaining output channel on the plane of the input
channel its table names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.fast import packing as fast
from microcompiler.ops.features import has_dsp
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range
from microcompiler.ops.requant_float import requant_output

PLANES = Variant("planes", ("kernel_planes.h",))


@dataclass
class PlaneGeometry:
    rows: int  # plane rows (top padding + used input rows + bottom padding)
    pitch: int  # plane values per row (even: pairs and rows stay word-aligned)
    used_h: int  # input rows copied into the plane
    used_w: int  # input columns copied into the plane
    pixel_pairs: bool  # stride 1, no horizontal dilation: two output pixels per step

    @property
    def nbytes(self) -> int:
        return 2 * self.rows * self.pitch


def plane_geometry(g) -> PlaneGeometry:
    last_y = (g.out_h - 1) * g.stride_h + (g.k_h - 1) * g.dil_h - g.pad_h
    last_x = (g.out_w - 1) * g.stride_w + (g.k_w - 1) * g.dil_w - g.pad_w
    # the columns the taps reach, and one more where a pair is read past the last tap: an odd kernel
    # width, or the right pixel of a pixel pair (stride 1); a pair never straddles two rows
    pixel_pairs = g.stride_w == 1 and g.dil_w == 1
    spill = 1 if pixel_pairs or g.k_w % 2 or g.dil_w != 1 else 0
    pitch = -(-(last_x + g.pad_w + 1 + spill) // 2) * 2
    return PlaneGeometry(
        rows=last_y + g.pad_h + 1,
        pitch=pitch,
        used_h=min(g.in_h, last_y + 1),
        used_w=min(g.in_w, last_x + 1),
        pixel_pairs=pixel_pairs,
    )


# Where channels4 also applies, planes is preferred (DSP targets) only up to this plane size: its
# scratch is RAM that channels4 does not need (VWW's 48x48 layer: 5,000 B, 4.7 -> 3.1 instructions
# per MAC).
PREFERRED_PLANE_BYTES = 8192

# At most this many distinct right shifts: one copy of the channel loop per shift.
MAX_SHIFT_GROUPS = 3

# Output rows up to this wide are computed at once (every plane word loaded once per kernel row).
MAX_ROW_PIXELS = 8


def row_words(g, pg: PlaneGeometry) -> int:
    """Plane words per kernel row of the whole-row mode (0: not used): pixel pairs, narrow rows."""
    if not pg.pixel_pairs or g.out_w > MAX_ROW_PIXELS:
        return 0
    even = max(ox // 2 + (g.k_w + 1) // 2 for ox in range(0, g.out_w, 2))
    odd = max(((ox + g.k_w - 1) // 2 + 1 for ox in range(1, g.out_w, 2)), default=0)
    return max(even, odd)


def plan(g, features) -> KernelPlan:
    pg = plane_geometry(g)
    return KernelPlan.of(
        PLANES,
        dsp_or_c(features),
        scratch_bytes=pg.nbytes,
        pixels=g.out_w if row_words(g, pg) else 2 if pg.pixel_pairs else 1,
        weights="s8",
    )


def input_channel_table(op, ctx, g) -> str | None:
    """The C array of the input channel each output channel reads, for a layer whose all-zero output
    channels passes/zero_channels.py dropped (the note ``input_channels``), else None."""
    table = op.notes.input_channels
    if table is None:
        return None
    return ctx.const(
        "input_channels",
        np.array(table, np.uint8 if g.in_c <= 256 else np.int16),
        comment=f"the input channel each of the {g.out_c} computed output channels reads",
    )


def emit_planes(op, graph, ctx, plan_: KernelPlan, g, bias) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    table = input_channel_table(op, ctx, g)  # dropped channels: each output channel names its input one
    mult = 1 if table else op.options.get("depth_multiplier", 1)
    pg = plane_geometry(g)
    w_taps = w.data.astype(np.int8).reshape(g.k_h * g.k_w, g.out_c)  # [tap][channel]
    yq = requant_output(op, ctx.tensor, y)  # the post table's quantization where it has one
    zp, y_zp = int(x.quant.zero_point[0]), int(yq.quant.zero_point[0])
    rq = fast.requant_setup(x, w, yq, bias, w_taps.T, op)
    ctx.note(requant="smmlar" if rq.fast else "reference")
    is_fast, scale, r = rq.fast, rq.scale, rq.r  # weights paired doubled with the fast requantization
    lo, hi = activation_range(op.options["activation"], y)
    if is_fast:  # {bias, M} and the right shifts as int8 (read once per channel)
        params, stride = fast.channel_params2(rq.folded * scale, rq.mult), 2
        layout = "{folded bias (doubled), multiplier}"
    else:
        params, stride = rq.params(), 4
        layout = "{folded bias, multiplier, shift, 0}"
    isa = "dsp" if has_dsp(ctx.features) else "c"
    r_groups, order, shifts, packed = None, None, None, None
    w_rows = np.ascontiguousarray(w_taps.T)  # [channel][tap], in the order the channels run
    w_comment = f"weights [{g.out_c} channels][{g.k_h * g.k_w} taps (ky, kx)], int8"
    # the bias shares its word with a byte (the channel index or r) when it fits 24 bits: 8 bytes per channel
    packable = is_fast and fast.fits_packed_bias(rq.folded * scale)
    if is_fast and mult == 1 and len(set(r.tolist())) <= MAX_SHIFT_GROUPS:
        # channels grouped by r: the shift becomes a literal (SSAT with ASR #r) in each group's loop
        idx = np.argsort(r, kind="stable")
        bounds = np.flatnonzero(np.diff(r[idx])) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), len(idx)]
        r_groups = [(int(r[idx[a]]), a, b) for a, b in zip(starts, ends)]
        ctx.note(shift_groups=len(r_groups))
        if packable and len(idx) <= 256:  # records and weights in run order, the channel in the record
            packed = "order"
            params = fast.channel_records_packed((rq.folded * scale)[idx], idx, rq.mult[idx])
            w_rows = np.ascontiguousarray(w_rows[idx])
            w_comment += ", channels in the order they run"
            layout = (
                "{folded bias (doubled) << 8 | channel, multiplier} in the order the channels run: grouped by "
                "right shift (the shift is in the code)"
            )
        else:
            order = ctx.const(
                "channels",
                idx.astype(np.uint8 if len(idx) <= 256 else np.int16),
                comment=f"the {len(idx)} channels in the order they run: grouped by right shift",
            )
            layout = "{folded bias (doubled), multiplier} (the right shift is in the code)"
    elif packable:
        packed = "shift"
        params = fast.channel_records_packed(rq.folded * scale, r, rq.mult)
        layout = "{folded bias (doubled) << 8 | right shift r, multiplier}"
    if is_fast and not r_groups and not packed:
        shifts = ctx.const("shifts", r.astype(np.int8), comment=f"right shift r per output channel [{g.out_c}]")
    values = dict(
        g=g,
        pg=pg,
        describe=g.describe(),
        mult=mult,
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=ctx.const("weights", w_rows, comment=w_comment),
        packed=packed,
        params=ctx.const("params", params, comment=f"per output channel [{g.out_c}] {layout}"),
        stride=stride,
        shifts=shifts,
        scale=scale,
        scratch=ctx.scratch(pg.nbytes),
        zp=zp,
        zp_pair=int(fast.pairs(np.array([zp]), np.array([zp]))[0]),
        r_groups=r_groups,
        order=order,
        input_channels=table,
        pairs_w=-(-g.k_w // 2),
        row_words=row_words(g, pg),
        isa=isa,
        fast=is_fast,
        act_min=lo,
        act_max=hi,
        output_offset=y_zp,
        runs_case=None,
        runs_cases=None,
        runs_function=None,
    )
    # the whole-row mode's shift groups as the cases of one function per layer shape, shared by the
    # layers of that shape (KWS on the M4: 2.4 KB less code, 440 fewer instructions); the layer passes
    # its runs and tail-calls it, so its frame is gone while the runs function works. The pixel-pairs
    # loops stay inline (as functions: VWW +6.7% instructions on the M4)
    if r_groups and packed == "order" and table is None and values["row_words"] and g.batches == 1:
        values["runs_function"] = _runs_function(ctx, g, values, [r for r, _, _ in r_groups])
    return ctx.render("depthwise_conv_2d_planes.c.j2", **values)


def _runs_function(ctx, g, values: dict, shifts: list[int]) -> str:
    """The function that runs a layer's channels run by run (mc_planes_run_t: a run's channels share
    their right shift, and the run gives their weights and params from its first channel on and
    their count), with a case per right shift where the shift is a literal. One per layer shape,
    shared by the layers of that shape: its cases are the union of the shifts they use."""
    arrays = {"weights": "weights", "params": "run->params"}  # each case walks the run's weights
    template = "depthwise_conv_2d_planes.c.j2"
    cases = {r: ctx.render(template, **{**values, **arrays, "runs_case": r}) for r in shifts}
    what = f"depthwise_conv_2d_{g.k_h}x{g.k_w}_planes_{g.in_h}x{g.in_w}x{g.in_c}_to_{g.out_h}x{g.out_w}x{g.out_c}"
    comment = (
        f"DEPTHWISE_CONV_2D planes, {g.describe()}: the runs of a layer's channels, one after the "
        "other; a run's channels have the same requantization right shift, one of {cases}"
    )

    def render(runs_cases: dict[int, str]) -> str:
        return ctx.render(template, **{**values, **arrays, "runs_cases": runs_cases})

    return ctx.helper(what, "const int8_t* x_b, int8_t* y_b, const mc_planes_run_t* run", cases, render, comment)
