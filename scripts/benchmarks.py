#!/usr/bin/env python3
"""Benchmark the MLPerf Tiny models on the emulated boards and write the tables of docs/benchmarks.md.

For each model (KWS, IC, AD from ../shared/models/mlperf_tiny, and the look-alikes of VWW,
micro_speech and person_detect built by scripts/lookalikes.py) and board (mps2_an386 Cortex-M4,
mps2_an500 Cortex-M7, mps2_an385 Cortex-M3, mps3_an547 Cortex-M55 with Helium) it runs

    microcompiler run MODEL --board BOARD --mode standalone --json --keep DIR

(QEMU with -icount shift=0: one instruction = one virtual nanosecond, so instructions per inference =
timer ticks x 1e9 / timer_hz, 40 per tick of the 25 MHz CMSDK timer read around the inference only,
31.25 per tick of the M55's 32 MHz SSE-300 system counter, exactly as ../shared/baselines/qemu_tflm.md
measured TFLite Micro; the M55 rows compare with its "CMSIS-NN with MVE" figures), checks the outputs against the
TFLM oracle bit for bit, and takes the flash and RAM split from the firmware's symbols. On the first
board (and on the M55) it also runs ``microcompiler bench MODEL --board BOARD --json`` for the
per-operator breakdown. The knob variants of VARIANTS (int16 conv weights, int16 FC weights) are built through
the Python API (compile_model(tuning=...) + run_on_board). The tables go between the
BENCHMARK-TABLES markers of the output file.

    python scripts/benchmarks.py                       # everything (about a minute)
    python scripts/benchmarks.py --models AD --boards mps2_an386 --no-bench --output /tmp/b.md
    python scripts/benchmarks.py --seanet              # the int16x8 set: reference vs fast, M4 and M7
    python scripts/benchmarks.py --float --boards mps2_an386   # the float ResNet-8 table only (stdout)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from lookalikes import LOOKALIKES
from lookalikes import write as write_lookalike

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
MODELS = {"KWS": "kws_ref_model", "IC": "pretrainedResnet_quant", "AD": "ad01_int8"}
# Peer figures without a shared .tflite: look-alike models (scripts/lookalikes.py), same layer shapes.
ALL_MODELS = [*MODELS, *LOOKALIKES]
BOARDS = {"mps2_an386": "M4", "mps2_an500": "M7", "mps2_an385": "M3", "mps3_an547": "M55"}
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
BEGIN, END = "<!-- BENCHMARK-TABLES:BEGIN -->", "<!-- BENCHMARK-TABLES:END -->"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def number(s: str) -> float:
    return float(s.replace(",", "").replace("≤", "").replace("M", "").strip())


def baselines() -> dict:
    """The TFLM figures: qemu_tflm.md (instructions, M4 memory) and README.md (X-CUBE-AI, arenas)."""
    out = {k: {} for k in ALL_MODELS}
    qemu = (SHARED / "baselines" / "qemu_tflm.md").read_text().splitlines()
    readme = (SHARED / "baselines" / "README.md").read_text().splitlines()
    memory_table = m55_table = False
    for line in qemu:
        if line.startswith("## "):
            memory_table, m55_table = line.startswith("## Memory"), "Cortex-M55" in line
        for key in ALL_MODELS:
            if not line.startswith(f"| {key}"):
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if m55_table and len(cells) == 5:  # model | CMSIS-NN MVE | CMSIS-NN +nomve | reference | goal
                out[key].update(cmsis_m55=number(cells[1]), ref_m55=number(cells[3]))
            elif not memory_table and not m55_table and len(cells) >= 7:
                out[key].update(
                    ref_m4=number(cells[2]),
                    cmsis_m4=number(cells[3]),
                    ref_m7=number(cells[4]),
                    cmsis_m7=number(cells[5]),
                )
            elif memory_table and len(cells) == 4:
                out[key].update(tflm_arena=number(cells[1]), tflm_text=number(cells[2]), tflm_stack=number(cells[3]))
    for line in readme:
        for key in MODELS:
            if line.startswith(f"| {key} ") and len(line.split("|")) >= 8:
                cells = [c.strip() for c in line.strip("|").split("|")]
                out[key].update(
                    xcube_ram=number(cells[4]), xcube_weights=number(cells[5]), tflite_weights=number(cells[6])
                )
    return out


def symbol_sizes(elf: Path) -> list[tuple[str, str, int]]:
    """(name, "FUNC" or "OBJECT", size) of every sized symbol (readelf: the linker script puts
    constants in .text, so nm's section letters cannot tell code from data)."""
    text = subprocess.run(["arm-none-eabi-readelf", "-sW", str(elf)], capture_output=True, text=True, check=True).stdout
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 8 and parts[3] in ("FUNC", "OBJECT"):
            size = int(parts[2], 0)  # readelf prints large sizes in hex
            if size:
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


def footprint(elf: Path, name: str, stack_high_water: int | None, meta: dict) -> dict:
    """Flash: model weights (its static const tables), model code (operator functions and
    <name>_run), the test input compiled into main.c, and the runtime (startup, platform, report,
    libc/libgcc, everything else). RAM: arena, the kernels' shared scratch buffer, output buffers,
    runtime data, stack high-water."""
    syms = symbol_sizes(elf)
    sections = section_sizes(elf)
    model_prefix = f"{name}_"
    ram_objects = (f"{name}_arena", f"{name}_scratch")
    weights = sum(s for n, t, s in syms if t == "OBJECT" and n.startswith(model_prefix) and n not in ram_objects)
    model_code = sum(s for n, t, s in syms if t == "FUNC" and n.startswith(model_prefix))
    from microcompiler.host import input_prefix

    # main.c's arrays of the model's inputs and outputs: g_<model>_input0, g_<model>_output0, ...
    # (host.input_prefix; not the runner's tables of their addresses and sizes, g_<model>_outputs and
    # g_<model>_output_bytes: those are const, in flash)
    prefix = re.escape(input_prefix(name))
    test_input = sum(s for n, t, s in syms if t == "OBJECT" and re.fullmatch(rf"{prefix}input\d+", n))
    flash = (
        sections.get(".text", 0)
        + sections.get(".ARM.exidx", 0)
        + sections.get(".data", 0)
        + sections.get(".weights", 0)
    )
    runtime_code = flash - weights - model_code - test_input
    arena = sum(s for n, t, s in syms if t == "OBJECT" and n == f"{name}_arena")
    outputs = sum(s for n, t, s in syms if t == "OBJECT" and re.fullmatch(rf"{prefix}output\d+", n))
    data_bss = sections.get(".data", 0) + sections.get(".bss", 0)
    scratch = sum(s for n, t, s in syms if t == "OBJECT" and n == f"{name}_scratch")
    return dict(
        flash=flash,
        weights=weights,
        model_code=model_code,
        runtime_code=runtime_code,
        test_input=test_input,
        arena=arena,
        outputs=outputs,
        runtime_data=data_bss - arena - scratch - outputs,
        stack=stack_high_water or 0,
        scratch=scratch,
        ram=data_bss - outputs + (stack_high_water or 0),
    )


def oracle_outputs(model: Path, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    try:
        sys.path.insert(0, str(ROOT / "tests"))
        from oracle import Oracle
    except Exception:  # the oracle (tflite-micro) is a test dependency
        return None
    return Oracle(model.read_bytes()).run(inputs)


def run_default(model: Path, board: str, work: Path) -> dict:
    """The public CLI: microcompiler run ... --mode standalone --json --keep DIR."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.inputs import random_inputs

    keep = work / f"{model.stem}-{board}"
    cmd = ["microcompiler", "run", str(model), "--board", board, "--mode", "standalone", "--json", "--keep", str(keep)]
    log("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout)
    library = compile_model(model, features=load_board(board).cpu.features)
    meta = library.metadata
    inputs = random_inputs(library.info.inputs)  # what `run` uses without --input
    outputs = [np.asarray(o) for o in report["outputs"]]
    return dict(
        ticks=report["device_ticks"],
        hz=report["timer_hz"],
        stack=report.get("stack_bytes"),
        meta=meta,
        elf=keep / "build" / "firmware.elf",
        outputs=outputs,
        inputs=inputs,
    )


def run_tuned(model: Path, board: str, work: Path, tuning: dict) -> dict:
    """The Python API with kernel knob overrides (compile_model(tuning=...) + run_on_board)."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.inputs import random_inputs
    from microcompiler.project import run_on_board

    b = load_board(board)
    lib = compile_model(model, features=b.cpu.features, tuning=tuning)
    inputs = random_inputs(lib.info.inputs)
    log(f"$ (python) compile_model({model.name}, tuning={tuning}) + run_on_board({board})")
    project, _, result = run_on_board(lib, b, work / f"{model.stem}-{board}-tuned", input=inputs, log=lambda _: None)
    return dict(
        ticks=result.ticks,
        hz=result.hz,
        stack=result.stack_bytes,
        meta=lib.metadata,
        elf=project.elf,
        outputs=result.outputs,
        inputs=inputs,
    )


def per_operator(model: Path, board: str) -> list[dict] | None:
    cmd = ["microcompiler", "bench", str(model), "--board", board, "--number", "1", "--repeat", "1", "--json"]
    log("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        log(f"bench failed (no per-operator table): {proc.stderr[-500:]}")
        return None
    report = json.loads(proc.stdout)
    ns = 1e9 / report["timer_hz"]
    return [dict(op, instructions=round(op["ticks"] * ns)) for op in report["operators"]]


def model_path(key: str, work: Path) -> Path:
    if key in LOOKALIKES:
        return write_lookalike(key, work)
    return SHARED / "models" / "mlperf_tiny" / f"{MODELS[key]}.tflite"


def measure(key: str, board: str, work: Path, tuning: dict | None) -> dict:
    model = model_path(key, work)
    r = run_tuned(model, board, work, tuning) if tuning else run_default(model, board, work)
    want = oracle_outputs(model, r["inputs"])
    exact = (
        None
        if want is None
        else all(
            np.array_equal(np.asarray(g).reshape(-1), np.asarray(w).reshape(-1)) for g, w in zip(r["outputs"], want)
        )
    )
    instructions = round(r["ticks"] * 1e9 / r["hz"])
    meta = r["meta"]
    return dict(
        model=key,
        board=board,
        tuning=tuning,
        instructions=instructions,
        macs=meta["total_macs"],
        exact=exact,
        variants=[o["kernel"] for o in meta["operators"]],
        meta=meta,
        **footprint(r["elf"], meta["name"], r["stack"], meta),
    )


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
        runs = [run_tuned(model, board, work, FLOAT_REFERENCE), run_default(model, board, work)]
        ref, new = (round(r["ticks"] * 1e9 / r["hz"]) for r in runs)
        want = oracle_outputs(model, runs[1]["inputs"])
        within = want is not None and all(
            np.allclose(np.asarray(g).reshape(-1), np.asarray(w).reshape(-1), rtol=FLOAT_RTOL, atol=1e-6)
            for g, w in zip(runs[1]["outputs"], want)
        )
        close = "—" if want is None else "yes" if within else "**no**"
        lines.append(
            f"| IC float32 | {board} ({BOARDS[board]}) | {fmt(ref)} | {fmt(new)} | {ref / new:.2f}x "
            f"| {new / runs[1]['meta']['total_macs']:.2f} | {close} |"
        )
        log(f"float {board}: {ref:,} -> {new:,} instructions")
    return "\n".join(lines) + "\n"


def fmt(n) -> str:
    return f"{int(round(n)):,}"


def display(key: str) -> str:
    return f"{key} (look-alike)" if key in LOOKALIKES else key


def tables(results: list[dict], ops: dict, base: dict) -> str:
    lines = [
        "### Instructions per inference",
        "",
        "| model | board | variant | MACs | instructions | per MAC | TFLM reference | TFLM + CMSIS-NN | "
        "vs CMSIS-NN | goal (0.5x) | bit-exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        core = BOARDS[r["board"]]
        b = base[r["model"]]
        ref, cmsis = {
            "M4": (b.get("ref_m4"), b.get("cmsis_m4")),
            "M7": (b.get("ref_m7"), b.get("cmsis_m7")),
            "M55": (b.get("ref_m55"), b.get("cmsis_m55")),
        }.get(core, (b.get("ref_m4"), b.get("cmsis_m4")))
        variant = r.get("label", "default")
        compared = core in ("M4", "M7", "M55")  # the M3 has no DSP: its row shows the M4 figures
        exact = {True: "yes", False: "**NO**", None: "not checked"}[r["exact"]]
        if cmsis is None:  # a look-alike without a measured peer figure on this core
            lines.append(
                f"| {display(r['model'])} | {r['board']} ({core}) | {variant} | {fmt(r['macs'])} "
                f"| {fmt(r['instructions'])} | {r['instructions'] / r['macs']:.2f} | — | — | — | "
                f"n/a (no baseline) | {exact} |"
            )
            continue
        goal = ("met" if r["instructions"] <= cmsis / 2 else "**missed**") if compared else "n/a (no DSP)"
        ref_note = " (MVE)" if core == "M55" else "" if compared else " (M4)"
        lines.append(
            f"| {display(r['model'])} | {r['board']} ({core}) | {variant} | {fmt(r['macs'])} | {fmt(r['instructions'])} "
            f"| {r['instructions'] / r['macs']:.2f} | {fmt(ref)}{ref_note} | {fmt(cmsis)}{ref_note} "
            f"| {r['instructions'] / cmsis:.3f}x | ≤ {fmt(cmsis / 2)}: {goal} | {exact} |"
        )
    lines += [
        "",
        "### Flash and RAM (bytes)",
        "",
        "Flash = weights (the model's constant tables, as laid out for the kernels) + model code (operator "
        "functions and `<model>_run`) + runtime code (startup, platform, report, libc/libgcc) + the test input "
        "compiled into the firmware. RAM = arena + the kernels' scratch (one .bss buffer shared by the "
        "operators) + runtime data (the rest of .data/.bss, without the output buffers) + stack high-water "
        "(measured by the firmware). TFLM figures: M4 CMSIS-NN build, text includes the model flatbuffer; "
        "its arena includes its kernels' scratch.",
        "",
        "| model | board | variant | flash | weights | model code | runtime code | test input | arena | "
        "scratch | stack high-water | runtime data | RAM | TFLM arena + stack | TFLM text | "
        "X-CUBE-AI RAM / weights |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        b = base[r["model"]]
        variant = r.get("label", "default")
        lines.append(
            f"| {display(r['model'])} | {r['board']} | {variant} | {fmt(r['flash'])} | {fmt(r['weights'])} "
            f"| {fmt(r['model_code'])} | {fmt(r['runtime_code'])} | {fmt(r['test_input'])} | {fmt(r['arena'])} "
            f"| {fmt(r['scratch'])} | {fmt(r['stack'])} | {fmt(r['runtime_data'])} | {fmt(r['ram'])} "
            f"| {fmt(b.get('tflm_arena', 0) + b.get('tflm_stack', 0))} | {fmt(b.get('tflm_text', 0))} "
            f"| {fmt(b['xcube_ram']) + ' / ' + fmt(b['xcube_weights']) if 'xcube_ram' in b else '—'} |"
        )
    for (key, board), operators in ops.items():
        if not operators:
            continue
        meta = next(r["meta"] for r in results if r["model"] == key and r["board"] == board and not r["tuning"])
        by_index = {o["index"]: o for o in meta["operators"]}
        total = sum(o["instructions"] for o in operators)
        lines += [
            "",
            f"### Per operator: {display(key)} on {board} (`microcompiler bench`, host-driven graph executor)",
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
                want = oracle_outputs(path, [x])
                exact = np.array_equal(got, golden) and (want is None or np.array_equal(got, want[0].reshape(-1)))
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
        help="file whose BENCHMARK-TABLES section is replaced (created if missing)",
    )
    p.add_argument("--json", type=Path, help="also write the raw results here")
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
    base = baselines()
    results, ops = [], {}
    with tempfile.TemporaryDirectory(prefix="mc-bench-") as tmp:
        work = Path(tmp)
        for key in args.models:
            for board in args.boards:
                results.append(measure(key, board, work, None))
                log(f"{key} {board}: {results[-1]['instructions']:,} instructions")
                for label, tuning in (
                    [] if args.no_variants or BOARDS[board] not in ("M4", "M7") else VARIANTS.get(key, [])
                ):
                    results.append(dict(measure(key, board, work, tuning), label=label))
                    log(f"{key} {board} {label}: {results[-1]['instructions']:,} instructions")
            if not args.no_bench:  # the first board's breakdown, and the M55's (its own kernels)
                for board in dict.fromkeys([args.boards[0], *(b for b in args.boards if BOARDS[b] == "M55")]):
                    ops[(key, board)] = per_operator(model_path(key, work), board)
    text = tables(results, ops, base)
    out = args.output
    doc = out.read_text() if out.exists() else f"{BEGIN}\n{END}\n"
    if BEGIN not in doc:
        doc += f"\n{BEGIN}\n{END}\n"
    doc = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: f"{BEGIN}\n{text}{END}", doc, flags=re.S)
    out.write_text(doc)
    if args.json:
        args.json.write_text(
            json.dumps([{k: v for k, v in r.items() if k != "meta"} for r in results], indent=1, default=str)
        )
    log(f"wrote {out}")
    return 0 if all(r["exact"] is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
