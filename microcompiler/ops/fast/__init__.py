"""The fast int8 kernels ("dsp": crt/include/microcompiler/kernel_simd.h; "mve": kernel_mve.h), one
module per kernel beside its template, in the TFLite Micro way (``kernels/cmsis_nn/`` beside the
reference kernels):

* ``packing.py``: the compile-time helpers the DSP kernels share (weight re-layout, bias
  folding, the proof that the accumulator allows the SMMLAR requantization);
* ``<op>_<variant>.py`` + ``<op>_<variant>.c.j2``: one kernel's emitter and its C template.
* ``mve.py`` + ``*_mve.c.j2``: the Helium (Cortex-M55) kernels' plans and emitters.

The operator modules (``ops/conv_2d.py``, ...) choose the variant (``kernel_plan``, ops/plan.py) and call the emitter.
``from microcompiler.ops import fast; fast.requant_table(...)`` keeps working: the helpers are
re-exported here.
"""

from microcompiler.ops.fast.packing import *  # noqa: F403
from microcompiler.ops.fast.packing import (  # the constants the * import leaves out
    FAST_ACC_LIMIT,
    INT32_MAX,
    LANES_ACC_LIMIT,
    LANES_CHUNK_BUDGET,
    MAX_COL_BYTES,
    MAX_FAST_SHIFT,
)
