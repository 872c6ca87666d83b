"""Run ../shared/tflm/tflm-bench (TFLite Micro + CMSIS-NN built as bare-metal firmware and run in QEMU
with -icount shift=0) on a model and read back its figures and outputs. Independent of microcompiler:
any script can put its own figures next to TFLM's with it.

    from tflm_bench import run_tflm
    result = run_tflm(Path("model.tflite"), "mps2_an386", [Path("input0.npy")], Path("/tmp/out"))
    result.instructions, result.report["arena_used_bytes"], result.outputs   # outputs: numpy arrays

The kit (its README) builds its library once per board (``~/.cache/tflm-bench/<board>-cmsis-nn``;
about 6 minutes on 2 free cores, 26 on 2 busy ones); later calls compile the model's firmware in
seconds. ``library_built`` tells whether a call would build. Every call waits at most ``timeout``
seconds; a failure of the kit (exit status 1-4) raises TflmBenchError with its message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# MC_TFLM_BENCH: another copy of the kit's script (default: ../shared/tflm/tflm-bench beside the checkout)
KIT = Path(os.environ.get("MC_TFLM_BENCH", ROOT.parent / "shared" / "tflm" / "tflm-bench"))
CACHE = Path(os.environ.get("MC_TFLM_BENCH_CACHE", Path.home() / ".cache" / "tflm-bench"))
BOARDS = ("mps2_an385", "mps2_an386", "mps2_an500", "mps3_an547", "mps2_an521")
# the kit's exit statuses (its README)
EXIT = {
    1: "firmware or TFLM error",
    2: "usage, prerequisite or input error (e.g. an operator TFLM has no AddXxx() for)",
    3: "build or link error (e.g. a model too big for the board's memory)",
    4: "QEMU timeout",
}
BUILD_TIMEOUT = 3600.0  # seconds a call may take when it builds the library first (26 min seen on busy cores)
RUN_TIMEOUT = 900.0  # seconds a call on a built library may take (compile, link, QEMU)


class TflmBenchError(RuntimeError):
    """tflm-bench failed or could not be run; the message says why."""


@dataclass
class TflmResult:
    report: dict  # tflm-bench's --json object
    outputs: list[np.ndarray] = field(default_factory=list)  # output_<k>.npy, in order
    inputs: list[np.ndarray] = field(default_factory=list)  # input_<k>.npy: what the firmware ran on

    @property
    def instructions(self) -> int:
        return int(self.report["instructions"])

    @property
    def flash(self) -> int:
        """Read-only memory and initialized data, as our flash figure: text (code, rodata, the model
        flatbuffer, the input) + data."""
        return int(self.report["text_bytes"]) + int(self.report["data_bytes"])


def library_dir(board: str, cache: Path = CACHE) -> Path:
    return cache / f"{board}-cmsis-nn"


def library_built(board: str, cache: Path = CACHE) -> bool:
    """Whether the kit's library for ``board`` is in the cache (a call then takes seconds, not minutes)."""
    return (library_dir(board, cache) / "build" / "libtflm.a").is_file()


def run_tflm(
    model: Path,
    board: str,
    inputs: list[Path],
    out: Path,
    *,
    timeout: float | None = None,
    cache: Path = CACHE,
    python: str = sys.executable,
) -> TflmResult:
    """``tflm-bench MODEL --board BOARD --input ... --out OUT --json``; the outputs read from OUT.
    ``python`` must have numpy and tflite (the kit's needs). ``timeout``: default RUN_TIMEOUT, or
    BUILD_TIMEOUT when the library is not built yet."""
    if board not in BOARDS:
        raise TflmBenchError(f"tflm-bench has no board {board} (it has {', '.join(BOARDS)})")
    if not KIT.is_file():
        raise TflmBenchError(f"{KIT}: no tflm-bench there (set MC_TFLM_BENCH to the kit's script)")
    if timeout is None:
        timeout = RUN_TIMEOUT if library_built(board, cache) else BUILD_TIMEOUT
    out.mkdir(parents=True, exist_ok=True)
    cmd = [python, str(KIT), str(model), "--board", board, "--out", str(out), "--json", "--cache", str(cache)]
    cmd += ["--timeout", str(int(min(timeout, 600)))]  # the QEMU run's own limit
    if inputs:
        cmd += ["--input", *map(str, inputs)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TflmBenchError(f"tflm-bench {model.name} --board {board} took more than {timeout:.0f} s") from None
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        why = (errors or proc.stderr.strip().splitlines() or ["no message"])[-1]
        kind = EXIT.get(proc.returncode, f"exit status {proc.returncode}")
        why = why.strip().removeprefix("tflm-bench: error: ")
        raise TflmBenchError(f"tflm-bench {model.name} --board {board}: {kind}: {why}")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise TflmBenchError(f"tflm-bench {model.name} --board {board}: no JSON on stdout") from None
    n = len(report["outputs"])
    outputs = [np.load(out / f"output_{k}.npy") for k in range(n)]
    used = [np.load(p) for p in sorted(out.glob("input_*.npy"), key=lambda p: int(p.stem.split("_")[1]))]
    return TflmResult(report=report, outputs=outputs, inputs=used)
