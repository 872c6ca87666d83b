"""AVERAGE_POOL_2D, int8, no clipped window, depth % 4 == 0, at most 255 taps: the "sxtab16" fast
kernel (template avg_pool_sxtab16.c.j2): 4 channels per step, the window summed in int16 lanes with
SXTAB16. The plan is Pool2D.plan in ops/pooling.py; the values are those of the reference template.
"""

from __future__ import annotations

from microcompiler.templating import offset


def emit_sxtab16(ctx, **values) -> str:
    """``values``: those of the reference template (pooling.c.j2)."""
    d, w = values["depth"], values["in_w"]
    window = offset([(values["y0"], values["out_h"], w * d), (values["x0"], values["out_w"], d)])
    return ctx.render("avg_pool_sxtab16.c.j2", window=window, **values)
