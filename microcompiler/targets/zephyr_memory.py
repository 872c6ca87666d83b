"""RAM of Zephyr firmware besides the model, by board: the kernel, main()'s stack, the receive
buffer (targets/zephyr.py builds with these; targets/footprint.py counts them for a board only
Zephyr runs, so analyze and the default --ram-limit say what a 16 KB board has left).
"""

from __future__ import annotations

from microcompiler.boards import Board

STANDALONE = "standalone"  # targets.base.STANDALONE (the mode whose firmware only writes)
STANDALONE_RX_BUFFER_BYTES = 64  # the standalone firmware only writes its reports
# A board with less RAM than this is small (qemu_cortex_m0: 16 KB): main() gets a smaller stack
# (the standalone firmware's high-water mark on the Cortex-M0 is ~270 B) and the RPC server smaller
# frames, so a model still has room (docs/zephyr.md, "Small boards").
SMALL_BOARD_RAM_BYTES = 64 * 1024
# RAM Zephyr needs besides the model and main()'s stack (kernel objects, the idle and ISR stacks,
# drivers, the C library), for the fit check before building: 16 KB on a board with 128 KB or more;
# on a smaller board an eighth of its RAM, but at least SMALL_KERNEL_RAM_BYTES. The figure for small
# boards is measured: Zephyr 3.7.1's hello_world on qemu_cortex_m0 (Cortex-M0, 16 KB) links 4,056 B
# of RAM, 1,024 of them main()'s stack (2 KB ISR stack, 256 B idle stack, ~730 B kernel and driver
# data); a margin rounds it up. The final link is the judge: a firmware that does not fit gives
# "the firmware does not fit: memory region RAM overflowed by N B".
KERNEL_RAM_BYTES = 16 * 1024
SMALL_KERNEL_RAM_BYTES = 3584


def small_board(board: Board) -> bool:
    """Whether ``board`` has so little RAM that its stacks and buffers are cut to fit (SMALL_BOARD_RAM_BYTES)."""
    return board.ram.size < SMALL_BOARD_RAM_BYTES


def base_stack_bytes(mode: str, board: Board | None = None) -> int:
    """main()'s stack before the model's share: less on a small board (small_board)."""
    if board is not None and small_board(board):
        return 1024 if mode == STANDALONE else 2048
    return 3072 if mode == STANDALONE else 4096


def system_ram_bytes(board: Board) -> int:
    """RAM a standalone Zephyr firmware takes on ``board`` besides the model and the runtime: main()'s
    stack for a small model, the kernel, the receive buffer (footprint.system_ram_bytes)."""
    return base_stack_bytes(STANDALONE, board) + kernel_ram_bytes(board) + STANDALONE_RX_BUFFER_BYTES


def kernel_ram_bytes(board: Board) -> int:
    """RAM the Zephyr kernel takes besides main()'s stack on ``board`` (KERNEL_RAM_BYTES says how)."""
    return min(KERNEL_RAM_BYTES, max(SMALL_KERNEL_RAM_BYTES, board.ram.size // 8))
