"""microcompiler: compile TFLite models to C for microcontrollers, and run them on boards.

The command line is ``microcompiler`` (microcompiler/cli.py). For notebooks, ``connect`` opens an
RPC session to a device running host-driven firmware (docs/rpc.md).
"""


def connect(*args, **kwargs):
    """Open an RPC session: ``microcompiler.connect(project_dir)``; see microcompiler.rpc.connect."""
    from microcompiler.rpc import connect as _connect
    return _connect(*args, **kwargs)
