"""See before you flash: what a compiled model costs on a board, without building anything.

``analyze_model`` compiles the model for the board's CPU and reports, per layer, the operator, its
shapes, MACs, weight bytes, kernel variant and estimated instructions (``cost_model``), the totals
against the board's memories, and the memory plan (``memory_plan``).
"""

from microcompiler.analysis.analyze import analyze_library, analyze_model

__all__ = ["analyze_model", "analyze_library"]
