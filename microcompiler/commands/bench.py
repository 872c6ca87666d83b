"""``microcompiler bench MODEL --board B``: device time per inference and per operator (over RPC)."""
from __future__ import annotations

from microcompiler.rpc.cli import add_bench_parser, bench


def add_parser(sub) -> None:
    add_bench_parser(sub)


run = bench
