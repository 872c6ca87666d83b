"""AVERAGE_POOL_2D, int8, no clipped window, depth % 4 == 0, at most 255 taps: the "sxtab16" fast
kernel (template avg_pool_sxtab16.c.j2): 4 channels per step, the window summed in int16 lanes with
SXTAB16. The plan is Pool2D.kernel_plan in ops/pooling.py; the values are those of the reference template.
"""

from __future__ import annotations

from microcompiler.ops.plan import Variant
from microcompiler.templating import offset

SXTAB16 = Variant("sxtab16", ("kernel_simd.h",))  # AVERAGE_POOL_2D int8, 4 channels per SXTAB16


def emit_sxtab16(ctx, **values) -> str:
    """``values``: those of the reference template (pooling.c.j2)."""
    d, w = values["depth"], values["in_w"]
    window = offset([(values["y0"], values["out_h"], w * d), (values["x0"], values["out_w"], d)])
    return ctx.render("avg_pool_sxtab16.c.j2", window=window, **values)
