"""Does a model fit a board: the flash and RAM its firmware will need, estimated from the model's
metadata.json before anything is built (``estimate_footprint``), against the board's memories
(``check_fits``: a one-line BoardError naming what does not fit).
"""

from __future__ import annotations

from microcompiler.boards import Board
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import BoardError
from microcompiler.targets import zephyr_memory

DEFAULT_STACK_BYTES = 8 * 1024
MIN_STACK_BYTES = 1024

# Flash estimate besides weights and input: startup, platform, report, libc/libgcc pieces, plus
# each operator's code (measured on this project's kernels at -O2, rounded up).
RUNTIME_CODE_BYTES = 6 * 1024
OPERATOR_CODE_BYTES = 1024
CALL_CODE_BYTES = 32  # a layer whose body is shared: a call with its arrays (codegen/shared_bodies.py)
GRAPH_EXECUTOR_CODE_BYTES = 2 * 1024
RUNTIME_RAM_BYTES = 1024  # libc's state, the executor's bookkeeping


def zephyr_only(board: Board | None) -> bool:
    """A board only Zephyr firmware runs on: a Zephyr board target described from the workspace, or
    a board file with a Zephyr board and no bare-metal platform."""
    return board is not None and not board.is_host and board.platform is None and bool(board.zephyr_board)


def system_ram_bytes(board: Board | None) -> int:
    """RAM a firmware for ``board`` takes besides the model and the runtime: the stack (DEFAULT_STACK_BYTES);
    on a Zephyr-only board main()'s stack, the kernel and its buffers (targets/zephyr.py system_ram_bytes),
    so that analyze and the default --ram-limit count what a 16 KB board really has left."""
    if zephyr_only(board):
        assert board is not None
        return zephyr_memory.system_ram_bytes(board)
    return DEFAULT_STACK_BYTES


def ram_for_models(board: Board, stack_bytes: int | None = None) -> int:
    """The board's RAM left for models after the runtime and the stack (``estimate_footprint``'s
    overheads; ``stack_bytes`` default: system_ram_bytes): a model's inputs, outputs, state, arena and
    scratch must fit in it."""
    return board.ram.size - (system_ram_bytes(board) if stack_bytes is None else stack_bytes) - RUNTIME_RAM_BYTES


def estimate_footprint(info: ModelInfo, executor: str, stack_bytes: int) -> dict:
    """Flash and RAM the firmware will need, estimated from metadata.json before building."""
    weights = info.params_bytes
    input_bytes, output_bytes = info.input_bytes, info.output_bytes
    shared = info.shared_bodies
    callers = sum(len(body.layers) for body in shared)
    code = (
        RUNTIME_CODE_BYTES
        + OPERATOR_CODE_BYTES * (len(info.operators) - callers + len(shared))
        + CALL_CODE_BYTES * callers
    )
    if executor == "graph":
        code += GRAPH_EXECUTOR_CODE_BYTES
        # the pool holds the arena, a copy of the inputs and the outputs
        activations = info.arena_bytes + input_bytes + output_bytes + 8 * (len(info.inputs) + len(info.outputs))
    else:
        activations = info.arena_bytes
    activations += info.scratch_bytes  # the kernels' shared scratch buffer (.bss)
    # state kept across inferences: its own static arrays, never shared (docs/state.md)
    activations += info.state_bytes
    return {
        "weights": weights,
        "code": code + input_bytes,
        "flash": weights + code + input_bytes,
        "activations": activations + output_bytes,
        "stack": stack_bytes,
        "ram": activations + output_bytes + stack_bytes + RUNTIME_RAM_BYTES,
    }


def check_fits(info: ModelInfo, board: Board, executor: str = "aot", stack_bytes: int = DEFAULT_STACK_BYTES) -> dict:
    """Raise BoardError when the model cannot fit the board; returns the estimate."""
    need = estimate_footprint(info, executor, stack_bytes)
    name = info.name
    flash, ram, weights = board.flash, board.ram, board.weights_region
    if need["weights"] > weights.size:
        raise BoardError(
            f"model {name} needs {need['weights']:,} B of flash for weights but board "
            f"{board.name} has {weights.size:,} B ({weights.name})"
        )
    if weights.name != flash.name:
        need["flash"] -= need["weights"]
        if need["flash"] > flash.size:
            raise BoardError(
                f"model {name} needs about {need['flash']:,} B of flash for code and input but "
                f"board {board.name} has {flash.size:,} B ({flash.name})"
            )
    elif need["flash"] > flash.size:
        raise BoardError(
            f"model {name} needs about {need['flash']:,} B of flash ({need['weights']:,} B of "
            f"weights + {need['code']:,} B of code and input) but board {board.name} has "
            f"{flash.size:,} B ({flash.name})"
        )
    if need["ram"] > ram.size:
        raise BoardError(
            f"model {name} needs about {need['ram']:,} B of RAM ({need['activations']:,} B of "
            f"activations and outputs + {need['stack']:,} B of stack) but board {board.name} has "
            f"{ram.size:,} B ({ram.name})"
        )
    return need
