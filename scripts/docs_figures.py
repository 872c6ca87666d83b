#!/usr/bin/env python3
"""Measure the figures the docs quote and write them into the docs: no hand-copied numbers.

Each section is a block of a Markdown page between ``<!-- FIGURES:<name>:BEGIN -->`` and
``<!-- FIGURES:<name>:END -->``, written by this script from what the commands print:

    python scripts/docs_figures.py cost-model     # docs/report.md: analyze's estimates against the
                                                  # instructions scripts/fit_cost_model.py measured (seconds)
    python scripts/docs_figures.py screenshots    # docs/images/*.png: report pages in headless Chromium (a minute)
    python scripts/docs_figures.py tuning         # docs/tuning.md: tune KWS and IC, validate the tuned KWS (minutes)
    python scripts/docs_figures.py ray            # docs/tuning.md: KWS tuned on a one-node and a two-node Ray cluster
    python scripts/docs_figures.py --check        # exit 1 if a block differs from what the script writes

What a section measured is kept in tests/data/docs_figures.json (the record) and the blocks are
rendered from it, so ``--check`` (and tests/test_docs_figures.py) can tell a hand edit from the
script's output without measuring again; the cost-model block is recomputed in full, since analyze
takes seconds. Every child process runs with a timeout.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))  # ray_nodes: the local Ray nodes of tests/test_tuning_ray.py

from microcompiler.timing import describe  # noqa: E402
from microcompiler.version import __version__  # noqa: E402

RECORD = ROOT / "tests/data/docs_figures.json"
MEASUREMENTS = ROOT / "tests/data/cost_model_measurements.json"  # written by scripts/fit_cost_model.py
REPORT_MD = ROOT / "docs/report.md"
TUNING_MD = ROOT / "docs/tuning.md"
VALIDATE_MD = ROOT / "docs/validate.md"
OUT = "out/docs-figures"  # relative to the repository root, as the docs' examples write out/
KWS = "../shared/models/mlperf_tiny/kws_ref_model.tflite"
IC = "../shared/models/mlperf_tiny/pretrainedResnet_quant.tflite"
IC_FLOAT = "../shared/models/mlperf_tiny/pretrainedResnet.tflite"
BOARD = "mps2_an386"
COST_MODEL_BOARDS = {
    "mps2_an385": "M3",
    "mps2_an386": "M4",
    "mps2_an500": "M7",
    "mps3_an547": "M55",
    "mps2_an521": "M33",
}
TIMEOUT = 1800  # seconds any one command may take
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
# name -> (page, the command that writes the HTML page, the PNG, window size, alt text)
SCREENSHOTS = {
    "screenshot-report": (
        REPORT_MD,
        f"microcompiler analyze {KWS} --board {BOARD} --html {OUT}/kws_report.html",
        "docs/images/report_kws_mps2_an386.png",
        (1100, 1600),
        "KWS analysis report for mps2_an386",
    ),
    "screenshot-validate": (
        VALIDATE_MD,
        f"microcompiler validate {IC} --board {BOARD} --inputs 2 --mode host-driven --reference {IC_FLOAT} "
        f"--html {OUT}/ic_validation.html",
        "docs/images/validate_ic_mps2_an386.png",
        (1100, 900),
        "IC validation report for mps2_an386",
    ),
}
PAGES = {"cost-model": REPORT_MD, "tuning": TUNING_MD, "ray": TUNING_MD} | {k: v[0] for k, v in SCREENSHOTS.items()}


SECTIONS = ("cost-model", "screenshots", "tuning", "ray")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- the blocks ----


def markers(name: str) -> tuple[str, str]:
    return f"<!-- FIGURES:{name}:BEGIN -->", f"<!-- FIGURES:{name}:END -->"


def block(text: str, name: str) -> str:
    """The body between a section's markers (a page without them has no such block: an error)."""
    begin, end = markers(name)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise SystemExit(f"the page needs one {begin} and one {end}")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def replace_block(text: str, name: str, body: str) -> str:
    begin, end = markers(name)
    block(text, name)
    head, rest = text.split(begin, 1)
    return f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}"


def run(command: str | list[str], what: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """A command as the docs show it (``microcompiler ...`` runs this checkout's CLI), from the root."""
    argv = command.split() if isinstance(command, str) else command
    if argv[0] == "microcompiler":
        argv = [sys.executable, "-m", "microcompiler.cli", *argv[1:]]
    log(f"{what}: {' '.join(argv[2:] if argv[0] == sys.executable else argv)}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc


def stamp() -> dict:
    return {"version": __version__, "date": datetime.now(UTC).strftime("%Y-%m-%d"), "cpus": os.cpu_count()}


def made_by(record: dict, command: str) -> str:
    return (
        f"Measured by `python scripts/docs_figures.py {command}` (microcompiler {record['version']}, "
        f"{record['date']}, a {record['cpus']}-core machine shared with other work)."
    )


# ---- cost model: analyze's estimate against bench's measurement ----


def cost_model_rows() -> list[dict]:
    """Every model scripts/fit_cost_model.py measured, on every board it measured, analyzed now."""
    import fit_cost_model

    measured = json.loads(MEASUREMENTS.read_text())
    with tempfile.TemporaryDirectory(prefix="docs-figures-") as tmp:
        paths = {p.name: p for p in fit_cost_model.models(Path(tmp))}
        return fit_cost_model.estimate_rows(measured, paths)


def render_cost_model(rows: list[dict]) -> str:
    boards = [b for b in COST_MODEL_BOARDS if any(r["board"] == b for r in rows)]
    cells: dict[str, dict[str, str]] = {}
    errors = []
    for r in rows:
        error = 100.0 * (r["estimated"] - r["measured"]) / r["measured"]
        errors.append((abs(error), r))
        cells.setdefault(r["model"], {})[r["board"]] = f"{error:+.1f}% ({r['estimated']:,} / {r['measured']:,.0f})"
    lines = [
        "| model | " + " | ".join(f"{COST_MODEL_BOARDS[b]} (`{b}`)" for b in boards) + " |",
        "|---|" + "---:|" * len(boards),
    ]
    for model, by_board in cells.items():
        lines.append(f"| {model} | " + " | ".join(by_board.get(b, "") for b in boards) + " |")
    worst, at = max(errors, key=lambda e: e[0])
    import fit_cost_model

    within = sum(fit_cost_model.within(r) for _, r in errors)
    return "\n".join(
        [
            "Whole-model instructions: the error of `microcompiler analyze`'s estimate as it is now (estimated / "
            "measured) against the counts `scripts/fit_cost_model.py` measured with `bench` in QEMU "
            "(`-icount shift=0`; `tests/data/cost_model_measurements.json`); written by "
            f"`python scripts/docs_figures.py cost-model`. Within 10% (or two timer ticks, the measurement's "
            f"resolution) on {within} of {len(errors)}; the largest "
            f"error is {worst:.1f}% ({at['model']} on {at['board']}).",
            "",
            *lines,
        ]
    )


# ---- screenshots of report pages ----


def chromium_command(name: str) -> str:
    _, _, png, (width, height), _ = SCREENSHOTS[name]
    page = SCREENSHOTS[name][1].split("--html ", 1)[1].split()[0]
    return (
        f"chromium {' '.join(CHROMIUM_FLAGS)} --user-data-dir={OUT}/chromium-profile --screenshot={png} "
        f"--window-size={width},{height} file://$PWD/{page}"
    )


def render_screenshot(name: str) -> str:
    _, command, png, _, alt = SCREENSHOTS[name]
    return "\n".join(
        [
            "The screenshot below was made by `python scripts/docs_figures.py screenshots`, which runs:",
            "",
            "```text",
            command,
            chromium_command(name),
            "```",
            "",
            f"![{alt}](images/{Path(png).name})",
        ]
    )


def take_screenshots() -> None:
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Debian's chromium package (apt-get install chromium)")
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    for name, (_, command, png, _, _) in SCREENSHOTS.items():
        run(command, f"{name}: the page")
        shot = chromium_command(name).replace("$PWD", str(ROOT)).split()
        run([chromium, *shot[1:]], f"{name}: the screenshot", timeout=180)
        info = PngInfo()  # the image says how it was made (tests/test_docs_figures.py reads it)
        info.add_text("Software", f"microcompiler {__version__}, scripts/docs_figures.py")
        info.add_text("Comment", command)
        with Image.open(ROOT / png) as image:
            image.load()
            image.save(ROOT / png, pnginfo=info, optimize=True)


# ---- tuning: the acceptance run of docs/tuning.md ----

TUNE_KWS = f"microcompiler tune {KWS} --board {BOARD} --jobs 2 --output {OUT}/kws.tuning.json --json"
TUNE_IC = f"microcompiler tune {IC} --board {BOARD} --jobs 2 --tuning {OUT}/kws.tuning.json --output {OUT}/ic.tuning.json --json"
TUNE_IC_AGAIN = f"microcompiler tune {IC} --board {BOARD} --jobs 2 --tuning {OUT}/ic.tuning.json --output {OUT}/ic2.tuning.json --json"
VALIDATE_KWS = (
    f"microcompiler validate {KWS} --board {BOARD} --tuning {OUT}/kws.tuning.json --inputs 10 --mode host-driven --json"
)
VALIDATE_IC = (
    f"microcompiler validate {IC} --board {BOARD} --tuning {OUT}/ic.tuning.json --inputs 10 --mode host-driven --json"
)


def _tune_summary(report: dict) -> dict:
    keep = ("seconds", "timer_hz", "heuristic_ticks", "tuned_ticks", "exact", "tuned", "reused")
    out = {k: report[k] for k in keep} | {
        "heuristic_time": report["heuristic_time"],
        "tuned_time": report["tuned_time"],
    }
    tuned = [s for s in report["signatures"] if s["status"] == "tuned"]
    out["builds"] = 1 + max((s["candidates"] for s in tuned), default=0) if tuned else 0
    out["operators"] = sum(len(s["operators"]) for s in report["signatures"])
    out["signatures"] = [
        {"kind": s["kind"], "operators": s["operators"], "status": s["status"], "knobs": s["knobs"]}
        for s in report["signatures"]
    ]
    return out


def measure_tuning() -> dict:
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    for name in ("kws", "ic", "ic2"):
        (ROOT / OUT / f"{name}.tuning.json").unlink(missing_ok=True)  # ours, from an earlier run
    record = stamp()
    for key, command in (("kws", TUNE_KWS), ("ic", TUNE_IC), ("ic_again", TUNE_IC_AGAIN)):
        record[key] = _tune_summary(json.loads(run(command, f"tuning: {key}").stdout))
    for key, command in (("kws_validate", VALIDATE_KWS), ("ic_validate", VALIDATE_IC)):
        report = json.loads(run(command, f"tuning: {key}").stdout)
        record[key] = {"passed": report["passed"], "bit_exact": report["bit_exact"], "samples": len(report["samples"])}
    return record


def _ticks(summary: dict) -> str:
    if summary["heuristic_ticks"] is None:
        return "nothing measured | - | -"
    faster = 100.0 * (1 - summary["tuned_ticks"] / summary["heuristic_ticks"])
    return (
        f"{summary['heuristic_ticks']:,.1f} -> {summary['tuned_ticks']:,.1f} | {faster:.1f}% | "
        f"{describe(summary['tuned_time'])}"
    )


def _choices(summary: dict) -> str:
    parts = []
    for s in summary["signatures"]:
        ops = ", ".join(str(i) for i in s["operators"])
        setting = json.dumps(s["knobs"]) if s["knobs"] else "the heuristic"
        parts.append(f"{s['kind']} (operator{'s' if len(s['operators']) > 1 else ''} {ops}): {setting}")
    return "; ".join(parts)


def _verdict(v: dict) -> str:
    if not v["passed"]:
        return "FAILED"
    return "passes exact" if v["bit_exact"] else "passes within tolerance (not exact)"


def render_tuning(record: dict) -> str:
    kws, ic, again = record["kws"], record["ic"], record["ic_again"]
    rows = [
        ("KWS", kws),
        ("IC, with KWS's log", ic),
        ("IC again, with its own log", again),
    ]
    table = [
        "| run | wall time | builds | operators | signatures tuned / reused | timer ticks, heuristic -> tuned "
        "| faster | one tuned inference | bit-exact |",
        "|---|---:|---:|---:|---|---|---:|---|---|",
    ]
    for what, s in rows:
        exact = "yes" if s["exact"] else "NO"
        table.append(
            f"| {what} | {s['seconds']:.1f} s | {s['builds']} | {s['operators']} | {s['tuned']} / {s['reused']} | "
            f"{_ticks(s)} | {exact} |"
        )
    return "\n".join(
        [
            made_by(record, "tuning") + " It ran:",
            "",
            "```text",
            TUNE_KWS,
            TUNE_IC,
            TUNE_IC_AGAIN,
            VALIDATE_KWS,
            VALIDATE_IC,
            "```",
            "",
            *table,
            "",
            f"KWS's choices per signature: {_choices(kws)}. Ticks are the board's timer (its rate in "
            f"`timer_hz`: {kws['timer_hz']:,} Hz) under `-icount shift=0`, so they are exact and repeat run "
            f"to run; the wall times depend on the machine's load. `validate --tuning` on "
            f"{record['kws_validate']['samples']} seeded inputs, host-driven: KWS {_verdict(record['kws_validate'])}, "
            f"IC {_verdict(record['ic_validate'])}. IC reuses {ic['reused']} of KWS's signatures: the two share "
            "no layer shape (KWS's convolutions are 10x4 stride 2 on 1 channel and 1x1 on 64x25x5, IC's 3x3 "
            "on 32x32, 16x16 and 8x8)" + (", as expected." if ic["reused"] == 0 else "."),
        ]
    )


# ---- Ray: KWS on one node and on two ----

TUNE_RAY = (
    f"microcompiler tune {KWS} --board {BOARD} --runner ray --address ADDRESS --jobs {{jobs}} "
    f"--output {OUT}/ray{{jobs}}.tuning.json --json"
)


def _wait_for_boards(address: str, boards: int) -> None:
    from ray_nodes import status

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if f"0.0/{boards}.0 {BOARD}" in status(address):
            return
        time.sleep(1)
    raise SystemExit(f"the Ray cluster did not show {boards} free {BOARD} within 180 s")


def measure_ray() -> dict:
    from ray_nodes import free_port, start_node, stop_node

    port = free_port()
    address = f"127.0.0.1:{port}"
    resources = json.dumps({BOARD: 1})
    temp = tempfile.mkdtemp(prefix="mcray-", dir="/tmp")  # Ray's socket paths must stay short
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    nodes = []
    record = stamp()
    try:
        head = ["--head", "--port", str(port), "--include-dashboard=false", "--temp-dir", temp]
        nodes.append(start_node(*head, "--num-cpus", "1", "--resources", resources))
        _wait_for_boards(address, 1)
        for jobs in (1, 2):
            if jobs == 2:
                nodes.append(start_node("--address", address, "--num-cpus", "1", "--resources", resources))
                _wait_for_boards(address, 2)
            (ROOT / OUT / f"ray{jobs}.tuning.json").unlink(missing_ok=True)
            command = TUNE_RAY.format(jobs=jobs).replace("ADDRESS", address)
            record[f"nodes{jobs}"] = _tune_summary(json.loads(run(command, f"ray: {jobs} node(s)").stdout))
        record["same_log"] = filecmp.cmp(
            ROOT / OUT / "ray1.tuning.json", ROOT / OUT / "ray2.tuning.json", shallow=False
        )
    finally:
        for node in reversed(nodes):
            stop_node(node)
        shutil.rmtree(temp, ignore_errors=True)
    return record


def render_ray(record: dict) -> str:
    one, two = record["nodes1"], record["nodes2"]
    table = [
        "| cluster | jobs in flight | wall time | timer ticks, heuristic -> tuned | faster | one tuned inference |",
        "|---|---|---|---|---:|---|",
        f"| one node, one board | 1 | {one['seconds']:.1f} s | {_ticks(one)} |",
        f"| two nodes, one board each | 2 | {two['seconds']:.1f} s | {_ticks(two)} |",
    ]
    same = "byte for byte the same" if record["same_log"] else "NOT the same"
    return "\n".join(
        [
            made_by(record, "ray") + " Both nodes run on this one host, each declaring one board, as two "
            "hosts with one board each would; `ADDRESS` is the head node's:",
            "",
            "```text",
            f"ray start --head --port PORT --num-cpus 1 --resources '{{\"{BOARD}\": 1}}' --include-dashboard=false --block &",
            TUNE_RAY.format(jobs=1),
            f"ray start --address ADDRESS --num-cpus 1 --resources '{{\"{BOARD}\": 1}}' --block &",
            TUNE_RAY.format(jobs=2),
            f"cmp {OUT}/ray1.tuning.json {OUT}/ray2.tuning.json",
            "```",
            "",
            *table,
            "",
            f"The two logs are {same} ({two['tuned']} signatures tuned; per signature: {_choices(two)}). KWS needs "
            f"{two['builds']} builds (the rounds and the tuned model), so two boards share them; a model with "
            "more candidates per operator has more rounds to spread.",
        ]
    )


# ---- main ----


def rendered(name: str, record: dict) -> str:
    if name == "cost-model":
        return render_cost_model(cost_model_rows())
    if name in SCREENSHOTS:
        return render_screenshot(name)
    return {"tuning": render_tuning, "ray": render_ray}[name](record[name])


def write(names: list[str], record: dict) -> None:
    for name in names:
        page = PAGES[name]
        page.write_text(replace_block(page.read_text(), name, rendered(name, record)))
        log(f"wrote the {name} block of {page.relative_to(ROOT)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"any of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--check", action="store_true", help="only compare the docs with what would be written")
    parser.add_argument(
        "--render", action="store_true", help="write the blocks from the record without measuring again"
    )
    args = parser.parse_args()
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    unknown = [s for s in args.sections if s not in SECTIONS]
    if unknown:
        parser.error(f"no section {', '.join(unknown)}; give any of {', '.join(SECTIONS)}")
    sections = args.sections or list(SECTIONS)
    names = [n for s in sections for n in (list(SCREENSHOTS) if s == "screenshots" else [s])]
    if args.check:
        stale = [n for n in names if block(PAGES[n].read_text(), n) != rendered(n, record)]
        for n in stale:
            log(f"{PAGES[n].relative_to(ROOT)}: the {n} block is not what scripts/docs_figures.py writes")
        return 1 if stale else 0
    for section in [] if args.render else sections:
        if section == "screenshots":
            take_screenshots()
        elif section in ("tuning", "ray"):
            record[section] = measure_tuning() if section == "tuning" else measure_ray()
            RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    write(names, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
