"""microcompiler: compile TFLite models to C for microcontrollers, and run them on boards.

The command line is ``microcompiler`` (microcompiler/cli.py). For notebooks, ``connect`` opens an
RPC session to a device running host-driven firmware, and ``open_model`` compiles a model, starts
host-driven firmware for a board and connects (docs/rpc.md; both live in microcompiler/api.py).
"""

from microcompiler.version import __version__  # written once, in version.py (pyproject.toml reads it there)

__all__ = ["__version__", "connect", "open_model"]


def connect(*args, **kwargs):
    """Open an RPC session: ``microcompiler.connect(project_dir)``; see microcompiler.api.connect."""
    from microcompiler.api import connect as _connect

    return _connect(*args, **kwargs)


def open_model(*args, **kwargs):
    """Compile, build and start host-driven firmware, and connect; see microcompiler.api.open_model."""
    from microcompiler.api import open_model as _open_model

    return _open_model(*args, **kwargs)
