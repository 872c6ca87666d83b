"""Graph-to-graph passes. Each is a function ``Graph -> Graph`` that leaves its input untouched.

``PIPELINE`` is the default order ``microcompiler.compiler`` runs them in.
"""
from microcompiler.passes.dead_code import remove_dead_code
from microcompiler.passes.fold_constants import fold_constants
from microcompiler.passes.fuse_activations import fuse_activations
from microcompiler.passes.memory_plan import plan_memory
from microcompiler.passes.operator_state import add_operator_state
from microcompiler.passes.remove_reshapes import remove_reshapes
from microcompiler.passes.zero_channels import drop_zero_channels

PIPELINE = [add_operator_state, fold_constants, fuse_activations, remove_reshapes, drop_zero_channels, remove_dead_code,
            plan_memory]

__all__ = ["PIPELINE", "add_operator_state", "fold_constants", "fuse_activations", "remove_reshapes",
           "drop_zero_channels", "remove_dead_code", "plan_memory"]
