"""A short libFuzzer run of the RPC server's parser (the long run's command and result: docs/rpc.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from microcompiler import resources

TESTS = Path(__file__).resolve().parent
CLANG = "clang-14"
FUZZ_FLAGS = [
    "-g",
    "-O1",
    "-fsanitize=fuzzer,address,undefined",
    "-fno-sanitize-recover=all",
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-DMC_RPC_MAX_PAYLOAD=256",
    "-DMC_RPC_MAX_ALLOCATIONS=8",
    "-DMC_RPC_MAX_TIMED_RUNS=4",
    "-DMC_RPC_MAX_ARGS=6",
]


def build_fuzzer(out: Path) -> Path:
    crt = resources.crt_dir()
    exe = out / "rpc_server_fuzz"
    sources = [
        TESTS / "fuzz/rpc_server_fuzz.c",
        crt / "src/rpc_framing.c",
        crt / "src/rpc_server.c",
        crt / "src/status.c",
    ]
    proc = subprocess.run(
        [CLANG, *FUZZ_FLAGS, f"-I{crt / 'include'}", *map(str, sources), "-o", str(exe)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return exe


@pytest.mark.skipif(
    shutil.which(CLANG) is None, reason=f"needs {CLANG} with libFuzzer (Debian: clang-14, libclang-rt-14-dev)"
)
def test_the_server_survives_a_short_fuzz_run(tmp_path):
    exe = build_fuzzer(tmp_path)
    seeds = tmp_path / "seeds"
    subprocess.run([sys.executable, str(TESTS / "fuzz/seeds.py"), str(seeds)], check=True, capture_output=True)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    proc = subprocess.run(
        [
            str(exe),
            str(corpus),
            str(seeds),
            "-max_total_time=5",
            "-max_len=1024",
            "-print_final_stats=1",
            f"-artifact_prefix={tmp_path}/",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = int(re.search(r"stat::number_of_executed_units:\s+(\d+)", proc.stderr).group(1))
    assert runs > 1000, proc.stderr[-2000:]
