"""``microcompiler bench MODEL --board B``: device time per inference and per operator (over RPC)."""
from __future__ import annotations

from microcompiler.errors import MicrocompilerError
from microcompiler.rpc.cli import add_bench_parser, bench

# The most runs one TIME request may ask of the device: MC_RPC_MAX_TIMED_RUNS in
# crt/include/microcompiler/rpc_server.h (the firmware microcompiler builds uses the default).
DEVICE_MAX_TIMED_RUNS = 1_000_000


def add_parser(sub) -> None:
    add_bench_parser(sub)
    sub.choices["bench"].set_defaults(func=run)


def run(args) -> int:
    if args.number > DEVICE_MAX_TIMED_RUNS:
        raise MicrocompilerError(f"--number {args.number} is more than the device runs in one measurement: its "
                                 f"limit is {DEVICE_MAX_TIMED_RUNS:,} (MC_RPC_MAX_TIMED_RUNS); use --number "
                                 f"{DEVICE_MAX_TIMED_RUNS} or less and raise --repeat instead")
    return bench(args)
