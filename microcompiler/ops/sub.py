"""SUB: int8, int16 (zero points 0), int32 and float32, with broadcasting up to 6D.

TFLite Micro's SUB is its ADD with the second rescaled input subtracted (sub_common.cc): both inputs
to a common scale with ``left_shift`` bits of headroom (20 for int8, 15 for int16), subtract,
rescale to the output. Unlike ADD, TFLM applies the fused activation to int32 results. The code is
ADD's (``add_mul.py``, templates ``add_mul_*.c.j2``, including the int8 SMMLAR fast variant).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.add_mul import Add
from microcompiler.ops.base import register


@register
class Sub(Add):
    kinds = ("SUB",)
    symbol = "-"
    int32_activation = True
    fast = {
        "dsp": "int8: one affine function of the two inputs (2 MLA + SSAT per element) where it equals TFLM on all 65,536 input pairs, else SMMLAR requantization",
        "mve": "int8, inputs of the output's shape (4 lanes, VQRDMULH)",
    }

    @staticmethod
    def _reals(a, b, y):
        """int8: as ADD's, but TFLM's SUB divides the scales in float32 before widening to double.
        int16: ADD's (in double), as TFLM runs int16 SUB as its ADD with input2's multiplier negated."""
        if y.dtype == "int16":
            return Add._reals(a, b, y)
        left_shift = 20
        s1, s2, so = (np.float32(t.quant.scale[0]) for t in (a, b, y))
        with np.errstate(over="ignore"):  # float32 products past the range are inf, as in TFLM; refused later
            twice_max = np.float32(2) * max(s1, s2)
            return (
                float(s1 / twice_max),
                float(s2 / twice_max),
                float(twice_max / (np.float32(1 << left_shift) * so)),
                left_shift,
            )
