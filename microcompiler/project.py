"""Firmware projects: the documented entry points, kept here for existing code.

The implementation is the targets package (microcompiler/targets/: the shared project core in
``base``, one module per template); see docs/architecture.md.
"""

from __future__ import annotations

from microcompiler.targets import (
    DEFAULT_STACK_BYTES,
    EXECUTORS,
    MODES,
    BuildResult,
    Project,
    RunResult,
    build,
    check_fits,
    create_models_project,
    create_project,
    estimate_footprint,
    firmware_size,
    flash,
    run_on_board,
    templates,
)

__all__ = [
    "Project",
    "BuildResult",
    "RunResult",
    "create_project",
    "create_models_project",
    "build",
    "flash",
    "firmware_size",
    "check_fits",
    "estimate_footprint",
    "templates",
    "run_on_board",
    "EXECUTORS",
    "MODES",
    "DEFAULT_STACK_BYTES",
]
