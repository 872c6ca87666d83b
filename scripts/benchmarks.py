#!/usr/bin/env python3
"""Benchmark tables of docs/benchmarks.md: our firmware and TFLite Micro + CMSIS-NN side by side.

For each model and board, scripts/tflm_side_by_side.py runs, on the same input,

    microcompiler run MODEL --board BOARD --mode standalone --input X.npy --json --keep DIR
    ../shared/tflm/tflm-bench MODEL --board BOARD --input X.npy --out DIR --json

(QEMU with -icount shift=0: one instruction = one virtual nanosecond, so both instruction counts are
exact), checks both outputs against the TFLM Python interpreter's (bit for bit; float outputs within
1e-5), and gives one row: MACs, instructions (ours, TFLM + CMSIS-NN, ratio), instructions per MAC,
arena, stack, flash and RAM on both sides. No TFLM figure is copied from anywhere: every one is
measured in the same run. A row whose run fails or whose outputs differ is printed as an error and the
script exits 1.

Models: the MLPerf Tiny four (KWS, IC, AD from ../shared/models/mlperf_tiny; VWW as the look-alike of
scripts/lookalikes.py), the TFLM example models of ../shared/models/tflm (hello_world int8 and float,
the int16x8 seanet convolutions on their shared inputs), the micro_speech and person_detect
look-alikes, and the Keras look-alikes of tests/models/keras (made by the real converter). Boards:
mps2_an385 (Cortex-M3: CMSIS-NN's portable C), mps2_an386 (M4), mps2_an500 (M7), mps3_an547 (M55,
CMSIS-NN with Helium) and mps2_an521 (M33). On the M4 and M7 the knob variants of VARIANTS (int16
weights, layer by layer) get rows of their own against the same TFLM figure. On mps2_an386 and
mps3_an547 ``microcompiler bench`` adds the per-operator tables.

Each board's tables go between the ``BENCHMARK-TABLES:<board>`` markers of the output file, so a
run on some boards leaves the others' tables (and their dates) as they are.

    python scripts/benchmarks.py                       # everything: hours (tflm-bench's first build per board ~6-26 min)
    python scripts/benchmarks.py --boards mps2_an386 --models KWS IC AD VWW
    python scripts/benchmarks.py --models AD --boards mps2_an386 --no-bench --no-variants --output /tmp/b.md
    python scripts/benchmarks.py --seanet              # the int16x8 set: reference vs fast, M4 and M7
    python scripts/benchmarks.py --float --boards mps2_an386   # the float ResNet-8 table only (stdout)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import footprint_before_after
import numpy as np
from lookalikes import LOOKALIKES
from lookalikes import write as write_lookalike
from tflm_side_by_side import SHORT_MODEL, SHORT_RUNS, SideBySideError, oracle, run_ours, run_ours_tuned, side_by_side

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
MLPERF = {"KWS": "kws_ref_model", "IC": "pretrainedResnet_quant", "AD": "ad01_int8"}
SEANET_DIR = SHARED / "models" / "tflm" / "seanet"
TFLM_EXAMPLES = {
    "hello_world": SHARED / "models" / "tflm" / "hello_world_int8.tflite",
    "hello_world_float": SHARED / "models" / "tflm" / "hello_world_float.tflite",
    **{f"seanet_{n}": SEANET_DIR / f"{n}.tflite" for n in ("conv0", "conv1", "conv2", "conv3")},
}
KERAS_DIR = ROOT / "tests" / "models" / "keras"
KERAS = [
    "ds_cnn_int8",
    "mobilenet_v1_025_96_int8",
    "efficientnet_b0_block_int8",
    "mobilenet_v3_small_int8",
    "conv_autoencoder_int8",
    "unet_int8",
    "transformer_block_int8",
    "lstm_int8",
    "lstm_unrolled_int8",
    "gru_unrolled_int8",
    "ds_cnn_int16x8",
    "conv_autoencoder_int16x8",
]
ALL_MODELS = ["KWS", "IC", "AD", "VWW", *TFLM_EXAMPLES, "micro_speech", "person_detect", *KERAS]
BOARDS = {"mps2_an385": "M3", "mps2_an386": "M4", "mps2_an500": "M7", "mps3_an547": "M55", "mps2_an521": "M33"}
CORE_NAMES = {
    "M3": "Cortex-M3 (no DSP: CMSIS-NN's portable C)",
    "M4": "Cortex-M4",
    "M7": "Cortex-M7",
    "M55": "Cortex-M55 (CMSIS-NN with Helium)",
    "M33": "Cortex-M33",
}
BREAKDOWN_BOARDS = ("mps2_an386", "mps3_an547")  # the per-operator tables (microcompiler bench)
# Knob variants measured besides the defaults (DSP boards): faster or leaner.
VARIANTS = {
    "KWS": [("int16 conv weights", {"CONV_2D": {"weights": "s16"}})],
    "IC": [("int16 conv weights", {"CONV_2D": {"weights": "s16"}})],
    "AD": [("int16 FC weights", {"FULLY_CONNECTED": {"weights": "s16"}})],
}
# Patch-based execution (issue #16, docs/memory.md): the MobileNet look-alikes run their stem as patches
# by default, so they are also measured layer by layer as TFLM runs them (faster, more RAM); IC stays
# layer by layer by default (the patches cut its peak by a third only) and is measured patched too.
VARIANTS["IC"].append(("patches 2x2 (--patches 2x2)", {"patches": "2x2"}))
for _key in ("VWW", "person_detect"):
    VARIANTS.setdefault(_key, []).append(("layer by layer (--patches off)", {"patches": "off"}))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def markers(board: str) -> tuple[str, str]:
    return f"<!-- BENCHMARK-TABLES:{board}:BEGIN -->", f"<!-- BENCHMARK-TABLES:{board}:END -->"


def model_path(key: str, work: Path) -> Path:
    if key in LOOKALIKES or key == "VWW":
        return write_lookalike(key, work)
    if key in MLPERF:
        return SHARED / "models" / "mlperf_tiny" / f"{MLPERF[key]}.tflite"
    if key in TFLM_EXAMPLES:
        return TFLM_EXAMPLES[key]
    return KERAS_DIR / f"{key}.tflite"


def model_inputs(key: str, model: Path, work: Path) -> list[Path] | None:
    """The input files of a model that has its own (seanet: the shared CSV); None: `run`'s seeded one."""
    if not key.startswith("seanet_"):
        return None
    from microcompiler.compiler import compile_model

    name = key.removeprefix("seanet_")
    shape = compile_model(model).info.inputs[0].shape
    x = np.loadtxt(SEANET_DIR / f"{name}_input0_int16.csv", delimiter=",", dtype=np.int64).astype(np.int16)
    path = work / f"{key}_input0.npy"
    np.save(path, x.reshape(shape))
    return [path]


def per_operator(model: Path, board: str) -> list[dict] | None:
    cmd = ["bench", str(model), "--board", board, "--number", "1", "--repeat", "1", "--json"]
    log("$ microcompiler " + " ".join(cmd))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "microcompiler.cli", *cmd], capture_output=True, text=True, env=env, timeout=1800
        )
    except subprocess.TimeoutExpired:
        log("bench took more than 1800 s (no per-operator table)")
        return None
    if proc.returncode != 0:
        log(f"bench failed (no per-operator table): {proc.stderr[-500:]}")
        return None
    report = json.loads(proc.stdout)
    ns = 1e9 / report["timer_hz"]
    return [dict(op, instructions=round(op["ticks"] * ns)) for op in report["operators"]]


def measure(key: str, board: str, work: Path, variants: bool) -> list[dict]:
    """The default row of KEY on BOARD and, on the M4/M7, its knob variants' rows (against the same
    TFLM run); a failed side or a differing output is a row with an "error"."""
    folder = work / f"{key}-{board}"
    try:
        model = model_path(key, work)
        inputs = model_inputs(key, model, work)
        rows = [dict(side_by_side(model, board, folder, inputs), key=key)]
    except (SideBySideError, OSError) as exc:
        log(f"{key} {board}: ERROR {exc}")
        return [dict(key=key, board=board, variant="default", error=str(exc), ours=getattr(exc, "ours", None))]
    log(f"{key} {board}: {rows[0]['instructions']:,} vs {rows[0]['tflm_instructions']:,} ({rows[0]['ratio']:.3f}x)")
    for i, (label, tuning) in enumerate(VARIANTS.get(key, []) if variants and BOARDS[board] in ("M4", "M7") else []):
        try:
            row = side_by_side(
                model,
                board,
                folder / f"variant{i}",
                rows[0]["input_files"],
                tuning=tuning,
                tflm=rows[0]["tflm"],
                label=label,
            )
            rows.append(dict(row, key=key))
            log(f"{key} {board} {label}: {row['instructions']:,} ({row['ratio']:.3f}x)")
        except SideBySideError as exc:
            rows.append(dict(key=key, board=board, variant=label, error=str(exc)))
    return rows


def fmt(n) -> str:
    return f"{int(round(n)):,}"


def display(key: str) -> str:
    return f"{key} (look-alike)" if key in LOOKALIKES else key


# Issue 34's goals for the int8 models: instructions against TFLM + CMSIS-NN's on the same core
GOALS = {"M4": 0.40, "M7": 0.40, "M55": 0.45, "M33": 0.45, "M3": 0.45}


def side_by_side_table(rows: list[dict]) -> list[str]:
    lines = [
        "| model | variant | MACs | instructions | TFLM + CMSIS-NN | ratio | goal | per MAC (ours / TFLM) "
        "| arena (ours / TFLM) | stack (ours / TFLM) | flash (ours / TFLM) | RAM (ours / TFLM) | outputs "
        "| analyze's estimate |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            message = r["error"].replace("|", "/").replace("\n", " ")
            ours = r.get("ours")  # our side ran and equals the interpreter; TFLM's failed
            if ours:
                lines.append(
                    f"| {display(r['key'])} | {r['variant']} | {fmt(ours['macs'])} | {fmt(ours['instructions'])} "
                    f"| **error**: {message} | | | | | | | | ours {ours['check']}, TFLM's none | |"
                )
            else:
                lines.append(f"| {display(r['key'])} | {r['variant']} | | **error**: {message} | | | | | | | | | | |")
            continue
        goal = GOALS[BOARDS[r["board"]]]
        met = f"≤ {goal:.2f}x: " + ("met" if r["ratio"] <= goal else "**missed**")
        if r.get("dtype", "int8") != "int8":  # the goals are the int8 models'
            met = f"({r['dtype']})"
        per_mac = f"{r['per_mac']:.2f} / {r['tflm_per_mac']:.2f}" if r["macs"] else "—"
        estimate = "—" if r.get("estimate") is None else f"{fmt(r['estimate'])} ({r['estimate_error'] * 100:+.1f}%)"
        if r.get("estimate_basis") is not None:  # a short model: against bench's count over many runs
            estimate = (
                f"{fmt(r['estimate'])} ({r['estimate_error'] * 100:+.1f}% of bench's "
                f"{fmt(round(r['estimate_basis']))} per run over {SHORT_RUNS})"
            )
        lines.append(
            f"| {display(r['key'])} | {r['variant']} | {fmt(r['macs'])} | {fmt(r['instructions'])} "
            f"| {fmt(r['tflm_instructions'])} | {r['ratio']:.3f}x | {met} | {per_mac} "
            f"| {fmt(r['arena'] + r['scratch'])} / {fmt(r['tflm_arena'])} | {fmt(r['stack'])} / {fmt(r['tflm_stack'])} "
            f"| {fmt(r['flash'])} / {fmt(r['tflm_flash'])} | {fmt(r['ram'])} / {fmt(r['tflm_ram'])} | {r['check']} "
            f"| {estimate} |"
        )
    return lines


def footprint_table(rows: list[dict]) -> list[str]:
    lines = [
        "| model | variant | flash | weights | model code | runtime code | test input | arena | scratch "
        "| stack high-water | runtime data | RAM |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" not in r:
            lines.append(
                f"| {display(r['key'])} | {r['variant']} | {fmt(r['flash'])} | {fmt(r['weights'])} "
                f"| {fmt(r['model_code'])} | {fmt(r['runtime_code'])} | {fmt(r['test_input'])} | {fmt(r['arena'])} "
                f"| {fmt(r['scratch'])} | {fmt(r['stack'])} | {fmt(r['runtime_data'])} | {fmt(r['ram'])} |"
            )
    return lines


def operator_table(key: str, board: str, operators: list[dict], meta: dict) -> list[str]:
    by_index = {o["index"]: o for o in meta["operators"]}
    total = sum(o["instructions"] for o in operators)
    lines = [
        "",
        f"#### Per operator: {display(key)} on {board} (`microcompiler bench`, host-driven graph executor)",
        "",
        "| # | operator | kernel | MACs | instructions | per MAC | share |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in operators:
        m = by_index.get(o.get("index"), {})
        k = m.get("kernel", {})
        knobs = ", ".join(f"{a}={v}" for a, v in k.items() if a not in ("variant", "scratch_bytes"))
        kernel = k.get("variant", "?") + (f" ({knobs})" if knobs else "")
        macs = m.get("macs", 0)
        per_mac = f"{o['instructions'] / macs:.2f}" if macs else "-"
        lines.append(
            f"| {o.get('index', '')} | {o.get('kind', o['function'])} | {kernel} | {fmt(macs)} "
            f"| {fmt(o['instructions'])} | {per_mac} | {o['instructions'] / total * 100:.1f}% |"
        )
    lines.append(f"| | sum of operators | | | {fmt(total)} | | |")
    return lines


def board_block(
    board: str, rows: list[dict], ops: dict, command: str, note: str = "", output: Path | None = None
) -> str:
    """The markdown between the board's markers: provenance, the side-by-side table, our footprint,
    the per-operator tables."""
    core = BOARDS[board]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    # local changes other than the page this script writes
    pathspec = (
        [".", f":!{output.resolve().relative_to(ROOT)}"] if output and output.resolve().is_relative_to(ROOT) else []
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", *pathspec], cwd=ROOT, capture_output=True
    )
    where = commit.stdout.strip() + (" with local changes" if dirty.stdout.strip() else "")
    exact = sum(1 for r in rows if "error" not in r)
    estimated = [r for r in rows if r.get("estimate") is not None]
    within = sum(1 for r in estimated if abs(r["estimate_error"]) <= 0.10)
    lines = [
        f"### {CORE_NAMES[core]} (`{board}`)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d} on commit {where} by `{command}`{note}: every figure of this "
        f"block, TFLM's too, from that run; {exact} of {len(rows)} rows ran on both sides with outputs equal to "
        f"the TFLM interpreter's; `microcompiler analyze`'s estimate is within 10% of the measured count on "
        f"{within} of {len(estimated)} (of a model under {SHORT_MODEL:,} instructions, a few timer ticks: of "
        f"`microcompiler bench`'s count per run over {SHORT_RUNS} runs back to back).",
        "",
        *side_by_side_table(rows),
        "",
        f"Our flash and RAM on `{board}` (bytes):",
        "",
        *footprint_table(rows),
    ]
    for (key, b), operators in ops.items():
        meta = next(
            (r["meta"] for r in rows if r.get("key") == key and r["variant"] == "default" and "meta" in r), None
        )
        if b == board and operators and meta:
            lines += operator_table(key, board, operators, meta)
    return "\n".join(lines) + "\n"


def write_block(doc: str, board: str, text: str) -> str:
    begin, end = markers(board)
    if begin not in doc:
        doc += f"\n{begin}\n{end}\n"
    return re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: f"{begin}\n{text}{end}", doc, flags=re.S)


# The float32 ResNet-8 (issue #13's float kernels): the default build against the reference loops.
FLOAT_MODEL = "pretrainedResnet"
FLOAT_REFERENCE = {kind: {"variant": "reference"} for kind in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")}
FLOAT_RTOL = 1e-5  # tests/harness.py: relative to TFLM's float kernels, 1e-6 absolute near zero


def float_table(boards: list[str], work: Path) -> str:
    """Markdown rows: float ResNet-8 per board, reference loops vs the default (fast float kernels),
    instructions per inference and whether the outputs are within FLOAT_RTOL of TFLM."""
    model = SHARED / "models" / "mlperf_tiny" / f"{FLOAT_MODEL}.tflite"
    lines = [
        "| model | board | reference loops | default | speed-up | per MAC | within 1e-5 of TFLM |",
        "|---|---|---|---|---|---|---|",
    ]
    for board in boards:
        default = run_ours(model, board, work / f"float-{board}", [])
        runs = [run_ours_tuned(model, board, work / f"float-{board}", default["inputs"], FLOAT_REFERENCE), default]
        ref, new = (r["instructions"] for r in runs)
        want = oracle(model, runs[1]["inputs"])
        within = all(
            np.allclose(np.asarray(g).reshape(-1), np.asarray(w).reshape(-1), rtol=FLOAT_RTOL, atol=1e-6)
            for g, w in zip(runs[1]["outputs"], want)
        )
        close = "yes" if within else "**no**"
        lines.append(
            f"| IC float32 | {board} ({BOARDS[board]}) | {fmt(ref)} | {fmt(new)} | {ref / new:.2f}x "
            f"| {new / runs[1]['meta']['total_macs']:.2f} | {close} |"
        )
        log(f"float {board}: {ref:,} -> {new:,} instructions")
    return "\n".join(lines) + "\n"


SEANET = ["conv0", "conv1", "conv2", "conv3"]  # int16x8 CONV_2D models of ../shared/models/tflm/seanet


def seanet_table(names: list[str], boards: list[str], work: Path) -> tuple[str, bool]:
    """The optional int16x8 set (--seanet): each seanet CONV_2D model with every layer's reference loop
    nest (compile_model(kernels="reference")) and with the default kernels, on its shared input, the
    outputs checked against the golden CSV and the TFLM oracle. (markdown table, all exact)."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.project import run_on_board

    folder = SHARED / "models" / "tflm" / "seanet"
    lines = [
        "| model | board | MACs | reference | fast (kernel) | per MAC (reference / fast) | fewer | exact |",
        "|---|---|---|---|---|---|---|---|",
    ]
    all_exact = True
    for name in names:
        path = folder / f"{name}.tflite"
        golden = np.loadtxt(folder / f"{name}_golden_int16.csv", delimiter=",", dtype=np.int64).reshape(-1)
        for board in boards:
            b, row = load_board(board), {}
            for kernels in ("reference", "fast"):
                lib = compile_model(path, features=b.cpu.features, kernels=kernels)
                x = np.loadtxt(folder / f"{name}_input0_int16.csv", delimiter=",", dtype=np.int64)
                x = x.astype(np.int16).reshape(lib.info.inputs[0].shape)
                log(f"$ (python) compile_model({name}.tflite, kernels={kernels!r}) + run_on_board({board})")
                _, _, r = run_on_board(lib, b, work / f"{name}-{board}-{kernels}", input=[x], log=lambda _: None)
                got = np.asarray(r.outputs[0]).reshape(-1).astype(np.int64)
                want = oracle(path, [x])
                exact = np.array_equal(got, golden) and np.array_equal(got, want[0].reshape(-1))
                all_exact = all_exact and exact
                row[kernels] = (round(r.ticks * 1e9 / r.hz), exact, lib.metadata)
            (ref, ref_ok, meta), (fast_, fast_ok, fast_meta) = row["reference"], row["fast"]
            macs = meta["total_macs"]
            variant = fast_meta["operators"][0]["kernel"]["variant"]
            lines.append(
                f"| {name} | {board} ({BOARDS[board]}) | {fmt(macs)} | {fmt(ref)} | {fmt(fast_)} ({variant}) | "
                f"{ref / macs:.2f} / {fast_ / macs:.2f} | {ref / fast_:.2f}x | "
                f"{'yes' if ref_ok and fast_ok else 'NO'} |"
            )
    return "\n".join(lines) + "\n", all_exact


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=ALL_MODELS, choices=ALL_MODELS)
    p.add_argument("--boards", nargs="+", default=list(BOARDS), choices=list(BOARDS))
    p.add_argument("--no-bench", action="store_true", help="skip the per-operator breakdown (microcompiler bench)")
    p.add_argument("--no-variants", action="store_true", help="skip the knob variants (int16 weights, layer by layer)")
    p.add_argument(
        "--output",
        type=Path,
        default=ROOT / "docs" / "benchmarks.md",
        help="file whose BENCHMARK-TABLES:<board> sections are replaced (appended if missing)",
    )
    p.add_argument("--json", type=Path, help="also write the raw rows here")
    p.add_argument(
        "--float",
        action="store_true",
        help="only the float32 ResNet-8 table (reference loops vs default), printed on stdout",
    )
    p.add_argument(
        "--seanet",
        nargs="*",
        choices=SEANET,
        metavar="MODEL",
        help="instead: the int16x8 seanet CONV_2D models (all without names), reference vs fast kernels, "
        "on the DSP boards of --boards; prints a markdown table, writes no file",
    )
    args = p.parse_args(argv)
    if args.float:
        with tempfile.TemporaryDirectory(prefix="mc-bench-") as tmp:
            print(float_table(args.boards, Path(tmp)), end="")
        return 0
    if args.seanet is not None:
        with tempfile.TemporaryDirectory(prefix="mc-bench-") as tmp:
            text, exact = seanet_table(
                args.seanet or SEANET, [b for b in args.boards if BOARDS[b] in ("M4", "M7")], Path(tmp)
            )
        print(text, end="")
        return 0 if exact else 1
    command = "python scripts/benchmarks.py" + "".join(
        f" {flag} {' '.join(v)}" if isinstance(v, list) else f" {flag}" if v is True else ""
        for flag, v in (
            ("--boards", args.boards if args.boards != list(BOARDS) else None),
            ("--models", args.models if args.models != ALL_MODELS else None),
            ("--no-bench", args.no_bench),
            ("--no-variants", args.no_variants),
        )
    )
    out = args.output
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="mc-bench-") as tmp:
        work = Path(tmp)
        for board in args.boards:  # one board at a time: tflm-bench builds its library once per board
            board_rows, ops = [], {}
            for n, key in enumerate(args.models, 1):
                board_rows += measure(key, board, work, not args.no_variants)
                if not args.no_bench and board in BREAKDOWN_BOARDS and "error" not in board_rows[-1]:
                    ops[(key, board)] = per_operator(model_path(key, work), board)
                # after every model, so a run stopped half-way leaves what it measured (marked partial)
                partial = "" if n == len(args.models) else f" (partial: {n} of {len(args.models)} models so far)"
                doc = out.read_text() if out.exists() else ""
                doc = write_block(doc, board, board_block(board, board_rows, ops, command, partial, out))
                if footprint_before_after.BEGIN in doc:  # flash and RAM against the 2026-11-26 tables
                    doc = footprint_before_after.rewrite(doc)
                out.write_text(doc)
            log(f"wrote {out} ({board})")
            rows += board_rows
    if args.json:
        keep = ("meta", "tflm", "input_files")
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k not in keep} for r in rows], indent=1))
    errors = [r for r in rows if "error" in r]
    for r in errors:
        log(f"error: {r['key']} on {r['board']} ({r['variant']}): {r['error']}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
