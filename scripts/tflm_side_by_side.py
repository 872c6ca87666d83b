#!/usr/bin/env python3
"""One model on one board, side by side: our firmware and TFLite Micro + CMSIS-NN on the same input.

    python scripts/tflm_side_by_side.py MODEL.tflite --board mps2_an386 [--input X.npy ...] [--json]

runs

    microcompiler run MODEL --board BOARD --mode standalone --input X.npy --json --keep DIR
    tflm-bench MODEL --board BOARD --input X.npy --out DIR --json          (scripts/tflm_bench.py)

(without --input: the seeded random input ``run`` uses, which it writes to DIR/inputs/ and which is
then given to tflm-bench), checks that both outputs equal the TFLM Python interpreter's (tests/oracle.py)
on that input -- bit for bit for integer outputs, within 1e-5 relative for float ones (TFLM's firmware
is built with fused multiply-add, the interpreter without) -- and returns one row: MACs, instructions
(ours, TFLM + CMSIS-NN, ratio), instructions per MAC, arena, stack, flash, RAM, and ``microcompiler
analyze``'s estimate of our instructions next to the measured count. Instructions are exact
counts: QEMU -icount shift=0 advances the virtual clock 1 ns per instruction, and both firmwares read a
timer around the inference only. A failure on either side or any output that differs raises
SideBySideError: a row has a figure only when both sides ran and agree with the oracle.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tflm_bench import TflmBenchError, TflmResult, run_tflm  # noqa: E402

CORES = {"mps2_an385": "M3", "mps2_an386": "M4", "mps2_an500": "M7", "mps3_an547": "M55", "mps2_an521": "M33"}
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6  # tests/harness.py's float tolerance
RUN_TIMEOUT = 1800.0  # seconds our `run` may take (compile, build, QEMU)


class SideBySideError(RuntimeError):
    """One side failed, or its outputs differ from the TFLM interpreter's. ``ours``: our instructions and
    MACs when our side ran and its outputs equal the interpreter's (TFLM's side failed), else None."""

    def __init__(self, message: str, ours: dict | None = None):
        super().__init__(message)
        self.ours = ours


def symbol_sizes(elf: Path) -> list[tuple[str, str, int]]:
    """(name, "FUNC" or "OBJECT", size) of every sized symbol (readelf: the linker script puts
    constants in .text, so nm's section letters cannot tell code from data). Symbols that alias
    another at the same address (gcc's identical-code folding makes the later copies aliases of the
    first) are counted once, under the first name, so the sizes add up to the image's."""
    text = subprocess.run(["arm-none-eabi-readelf", "-sW", str(elf)], capture_output=True, text=True, check=True).stdout
    out = []
    seen: set[tuple[int, int]] = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 8 and parts[3] in ("FUNC", "OBJECT"):
            size = int(parts[2], 0)  # readelf prints large sizes in hex
            where = (int(parts[1], 16), size)
            if size and where not in seen:
                seen.add(where)
                out.append((parts[7], parts[3], size))
    return out


def section_sizes(elf: Path) -> dict[str, int]:
    text = subprocess.run(["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=True).stdout
    sizes = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def footprint(elf: Path, name: str, stack_high_water: int | None) -> dict:
    """Flash: model weights (its static const tables), model code (operator functions and
    <name>_run), the test input compiled into main.c, and the runtime (startup, platform, report,
    libc/libgcc, everything else). RAM: arena, the kernels' shared scratch buffer, output buffers,
    runtime data, stack high-water."""
    from microcompiler.host import input_prefix

    syms = symbol_sizes(elf)
    sections = section_sizes(elf)
    ram_objects = (f"{name}_arena", f"{name}_scratch")
    weights = sum(s for n, t, s in syms if t == "OBJECT" and n.startswith(f"{name}_") and n not in ram_objects)
    model_code = sum(s for n, t, s in syms if t == "FUNC" and n.startswith(f"{name}_"))
    # main.c's arrays of the model's inputs and outputs: g_<model>_input0, g_<model>_output0, ...
    # (host.input_prefix; not the runner's const tables of their addresses and sizes)
    prefix = re.escape(input_prefix(name))
    test_input = sum(s for n, t, s in syms if t == "OBJECT" and re.fullmatch(rf"{prefix}input\d+", n))
    flash = sum(sections.get(s, 0) for s in (".text", ".ARM.exidx", ".data", ".weights"))
    arena = sum(s for n, t, s in syms if t == "OBJECT" and n == f"{name}_arena")
    outputs = sum(s for n, t, s in syms if t == "OBJECT" and re.fullmatch(rf"{prefix}output\d+", n))
    data_bss = sections.get(".data", 0) + sections.get(".bss", 0)
    scratch = sum(s for n, t, s in syms if t == "OBJECT" and n == f"{name}_scratch")
    stack = stack_high_water or 0
    return dict(
        flash=flash,
        weights=weights,
        model_code=model_code,
        runtime_code=flash - weights - model_code - test_input,
        test_input=test_input,
        arena=arena,
        outputs=outputs,
        runtime_data=data_bss - arena - scratch - outputs,
        stack=stack,
        scratch=scratch,
        ram=data_bss - outputs + stack,
    )


def oracle(model: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The TFLM Python interpreter's outputs (tests/oracle.py, a bounded child process)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from oracle import Oracle, TFLMError
    except ImportError as exc:  # tflite-micro is in the test extras
        raise SideBySideError(f"no TFLM interpreter to check the outputs with ({exc}): pip install '.[test]'") from None
    try:
        return Oracle(model.read_bytes()).run(inputs)
    except TFLMError as exc:
        raise SideBySideError(f"the TFLM interpreter failed on {model.name}: {exc}") from None


def microcompiler(cmd: list[str], what: str) -> str:
    """Run ``microcompiler CMD`` from this checkout (bounded by RUN_TIMEOUT); its stdout, or a
    SideBySideError naming ``what`` with the command's last line of stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "microcompiler.cli", *cmd],
            capture_output=True,
            text=True,
            env=env,
            timeout=RUN_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise SideBySideError(f"microcompiler {what} took more than {RUN_TIMEOUT:.0f} s") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise SideBySideError(f"microcompiler {what} failed: {why}")
    return proc.stdout


def run_ours(model: Path, board: str, work: Path, inputs: list[Path], cli_args: tuple[str, ...] = ()) -> dict:
    """``microcompiler run ... --mode standalone --json --keep DIR`` with this checkout's code."""
    keep = work / "ours"
    cmd = ["run", str(model), "--board", board, "--mode", "standalone", "--json", "--keep", str(keep), *cli_args]
    for path in inputs:
        cmd += ["--input", str(path)]
    report = json.loads(microcompiler(cmd, f"run {model.name} --board {board}"))
    meta = json.loads((keep / "model" / "metadata.json").read_text())
    used = [np.load(keep / "inputs" / f"input{k}.npy") for k in range(len(meta["inputs"]))]
    outputs = [np.asarray(o, dtype=d) for o, d in zip(report["outputs"], report["output_dtypes"])]
    return dict(
        instructions=round(report["device_ticks"] * 1e9 / report["timer_hz"]),
        stack=report.get("stack_bytes"),
        meta=meta,
        elf=keep / "build" / "firmware.elf",
        outputs=outputs,
        inputs=used,
    )


# A model shorter than this many instructions is a few timer ticks (hello_world's 600 on the M4: 15 of
# 40 instructions; on mps2_an521 12 of 50): one timed run cannot hold analyze's estimate to 10%.
# Its estimate is compared with `bench`'s count per run over SHORT_RUNS runs back to back instead.
SHORT_MODEL = 20_000
SHORT_RUNS = 25


def bench_instructions(model: Path, board: str, runs: int) -> float:
    """``microcompiler bench MODEL --board BOARD --number RUNS --repeat 1 --json``'s instructions per
    inference (its timer's ticks over RUNS runs back to back, with their fraction)."""
    cmd = ["bench", str(model), "--board", board, "--json", "--number", str(runs), "--repeat", "1"]
    report = json.loads(microcompiler(cmd, f"bench {model.name} --board {board}"))
    return report["inference"]["ticks_per_run"] * 1e9 / report["timer_hz"]


def analyze_estimate(model: Path, board: str, cli_args: tuple[str, ...] = ()) -> int:
    """``microcompiler analyze MODEL --board BOARD --json``'s estimated instructions per inference (issue 34,
    item 4: within 10% of what the firmware measures)."""
    cmd = ["analyze", str(model), "--board", board, "--json", *cli_args]
    report = json.loads(microcompiler(cmd, f"analyze {model.name} --board {board}"))
    return int(report["totals"]["estimated_instructions"])


def run_ours_tuned(model: Path, board: str, work: Path, inputs: list[np.ndarray], tuning: dict) -> dict:
    """The Python API with kernel knob overrides (compile_model(tuning=...) + run_on_board): knobs the
    CLI has no option for (e.g. int16 weights)."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.project import run_on_board

    b = load_board(board)
    lib = compile_model(model, features=b.cpu.features, tuning=tuning)
    project, _, result = run_on_board(lib, b, work / "ours-tuned", input=inputs, log=lambda _: None)
    return dict(
        instructions=round(result.ticks * 1e9 / result.hz),
        stack=result.stack_bytes,
        meta=lib.metadata,
        elf=project.elf,
        outputs=[np.asarray(o) for o in result.outputs],
        inputs=inputs,
    )


def compare(name: str, got: list[np.ndarray], want: list[np.ndarray]) -> str:
    """'bit-exact' or 'within 1e-5' (float outputs), else SideBySideError naming the first difference."""
    if len(got) != len(want):
        raise SideBySideError(f"{name}: {len(got)} outputs, the TFLM interpreter has {len(want)}")
    check = "bit-exact"
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g).reshape(-1), np.asarray(w).reshape(-1)
        if g.size != w.size:
            raise SideBySideError(f"{name}: output {k} has {g.size} values, the TFLM interpreter's {w.size}")
        if w.dtype.kind == "f":
            if not np.allclose(g, w, rtol=FLOAT_RTOL, atol=FLOAT_ATOL):
                worst = int(np.argmax(np.abs(g.astype(np.float64) - w)))
                raise SideBySideError(
                    f"{name}: output {k}[{worst}] = {g[worst]!r}, the TFLM interpreter's {w[worst]!r}"
                )
            if not np.array_equal(g, w):
                check = "within 1e-5"
        elif not np.array_equal(g.astype(np.int64), w.astype(np.int64)):
            bad = np.flatnonzero(g.astype(np.int64) != w.astype(np.int64))
            raise SideBySideError(
                f"{name}: output {k} differs from the TFLM interpreter's in {bad.size} of {g.size} values "
                f"(first [{bad[0]}]: {g[bad[0]]} vs {w[bad[0]]})"
            )
    return check


def save_inputs(arrays: list[np.ndarray], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, a in enumerate(arrays):
        paths.append(folder / f"input{k}.npy")
        np.save(paths[-1], a)
    return paths


def side_by_side(
    model: Path,
    board: str,
    work: Path,
    inputs: list[Path] | None = None,
    *,
    tuning: dict | None = None,
    cli_args: tuple[str, ...] = (),
    tflm: TflmResult | None = None,
    label: str = "default",
) -> dict:
    """The row of MODEL on BOARD (see the module's docstring). ``inputs``: .npy files, one per model input
    (default: `run`'s seeded random input). ``tuning``: kernel knobs through the Python API; ``cli_args``:
    more `run` options (e.g. ("--patches", "off")); ``tflm``: a TFLM result of the same model, board
    and input to reuse (variants of our build). Raises SideBySideError (either side failed, an output
    differs from the TFLM interpreter's) -- there is no row without both figures."""
    work.mkdir(parents=True, exist_ok=True)
    if tuning:
        arrays = [np.load(p) for p in inputs] if inputs else None
        if arrays is None:  # `run`'s seeded random input, as the CLI path uses
            from microcompiler.compiler import compile_model
            from microcompiler.inputs import random_inputs

            arrays = random_inputs(compile_model(model).info.inputs)
        ours = run_ours_tuned(model, board, work, arrays, tuning)
    else:
        ours = run_ours(model, board, work, inputs or [], cli_args)
    used = save_inputs(ours["inputs"], work / "inputs")  # exactly what our firmware ran on
    want = oracle(model, ours["inputs"])
    check_ours = compare(f"{model.name} on {board} (ours)", ours["outputs"], want)
    if tflm is None:
        try:
            tflm = run_tflm(model, board, used, work / "tflm")
        except TflmBenchError as exc:  # ours ran and is right: its figures go with the error
            ours_only = dict(instructions=ours["instructions"], macs=int(ours["meta"]["total_macs"]), check=check_ours)
            raise SideBySideError(str(exc), ours_only) from None
    for k, (a, b) in enumerate(zip(ours["inputs"], tflm.inputs)):
        if a.tobytes() != b.tobytes():
            raise SideBySideError(f"{model.name}: TFLM ran on another input {k} than ours")
    check_tflm = compare(f"{model.name} on {board} (TFLM + CMSIS-NN)", tflm.outputs, want)
    meta = ours["meta"]
    fp = footprint(ours["elf"], meta["name"], ours["stack"])
    estimate = None if tuning else analyze_estimate(model, board, cli_args)
    # what the estimate is held against: the measured count, or bench's over many runs for a short model
    basis = ours["instructions"]
    if estimate is not None and not cli_args and ours["instructions"] < SHORT_MODEL:
        basis = bench_instructions(model, board, SHORT_RUNS)
    t = tflm.report
    macs = int(meta["total_macs"])
    ratio = ours["instructions"] / tflm.instructions
    return dict(
        model=model.stem,
        board=board,
        core=CORES.get(board, board),
        variant=label,
        macs=macs,
        dtype=meta["inputs"][0]["dtype"] if meta["inputs"] else "",  # the activations' type
        instructions=ours["instructions"],
        tflm_instructions=tflm.instructions,
        ratio=ratio,
        per_mac=ours["instructions"] / macs if macs else None,
        tflm_per_mac=tflm.instructions / macs if macs else None,
        estimate=estimate,  # analyze's instructions (None for knob variants: analyze has no --tuning dict)
        estimate_error=None if estimate is None else estimate / basis - 1,
        estimate_basis=None if basis == ours["instructions"] else basis,  # bench's count, short models
        tflm_arena=int(t["arena_used_bytes"]),
        tflm_stack=int(t["stack_bytes"]),
        tflm_flash=tflm.flash,
        tflm_ram=int(t["arena_used_bytes"]) + int(t["stack_bytes"]) + int(t["data_bytes"]) + int(t["bss_bytes"]),
        check="bit-exact" if check_ours == check_tflm == "bit-exact" else "within 1e-5",
        operators=[o["kernel"] for o in meta["operators"]],
        input_files=used,
        meta=meta,
        tflm=tflm,
        **fp,
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path)
    p.add_argument("--board", required=True, choices=list(CORES))
    p.add_argument("--input", action="append", type=Path, default=[], help="an input .npy (repeat per input)")
    p.add_argument("--json", action="store_true", help="print the row as JSON")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mc-side-") as tmp:
        try:
            row = side_by_side(args.model.resolve(), args.board, Path(tmp), args.input or None)
        except SideBySideError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    row = {k: v for k, v in row.items() if k not in ("meta", "tflm", "operators", "input_files")}
    if args.json:
        print(json.dumps(row, indent=1))
    else:
        print(
            f"{row['model']} on {args.board}: {row['instructions']:,} vs TFLM + CMSIS-NN {row['tflm_instructions']:,} "
            f"instructions ({row['ratio']:.3f}x), outputs {row['check']} on both sides"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
