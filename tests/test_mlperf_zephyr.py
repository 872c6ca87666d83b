"""The Zephyr variant of the MLPerf Tiny firmware: template mlperf-zephyr (microcompiler/targets/mlperf.py).

Zephyr cannot be installed everywhere these tests run, so they check what can be checked without it:
the project a board gets (the zephyr template's application files, the bare-metal variant's main.c,
crt/src/mlperf_dut.c in the build, every Kconfig symbol verified); that the whole application
(main.c, the model, the protocol and crt/platform/zephyr/platform.c, with the project's Kconfig)
compiles with strict flags against a fake Zephyr API (tests/data/zephyr_stub, Zephyr's signatures)
and, run on this computer, answers the protocol with TFLM's scores; that the platform's timers
survive their counters' wraps; and the one-line error without west. The
official runner against the Zephyr firmware in QEMU runs where west, ZEPHYR_BASE and QEMU are there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oracle import Oracle
from test_zephyr import kconfig_assignments, verified_symbols

from microcompiler.boards import board_names, load_board
from microcompiler.mlperf import BENCHMARKS, expected_scores, model_input
from microcompiler.project import create_project
from microcompiler.targets import zephyr

ROOT = Path(__file__).resolve().parents[1]
FAKE_ZEPHYR = ROOT / "tests" / "data" / "zephyr_stub"  # zephyr/*.h and fake_zephyr.c: the fake Zephyr
TEMPLATE = "mlperf-zephyr"
KWS = "kws_ref_model"
ZEPHYR_BOARDS = [name for name in board_names() if load_board(name).zephyr_board]


@pytest.fixture(scope="module")
def kws(shared_models) -> Path:
    return shared_models / "mlperf_tiny" / f"{KWS}.tflite"


@pytest.mark.parametrize("board_name", ZEPHYR_BOARDS)
def test_every_zephyr_board_gets_the_dut_as_a_zephyr_application(board_name, kws, tmp_path):
    board = load_board(board_name)
    project = create_project(kws, TEMPLATE, board, tmp_path / "z", benchmark="kws01")
    d = project.dir
    info = json.loads((d / "microcompiler-project.json").read_text())
    assert (info["template"], info["benchmark"], info["zephyr_board"]) == (TEMPLATE, "kws01", board.zephyr_board)
    assert project.elf == d / "build" / "zephyr" / "zephyr.elf"  # west build's output

    cmake = (d / "CMakeLists.txt").read_text()
    assert "find_package(Zephyr REQUIRED HINTS $ENV{ZEPHYR_BASE})" in cmake
    listed = re.findall(r"^\s+((?:model|crt|src)/\S+\.c)$", cmake, re.M)
    for source in ("src/main.c", "crt/src/mlperf_dut.c", "crt/platform/zephyr/platform.c", "crt/src/status.c"):
        assert source in listed
    for source in listed:
        assert (d / source).is_file(), f"CMakeLists.txt lists {source}, which is missing"
    assert not (d / "crt" / "platform" / "cmsdk").exists() and not (d / "linker.ld").exists()

    prj = kconfig_assignments(d / "prj.conf")
    fragment = kconfig_assignments(d / "boards" / f"{board.zephyr_board.replace('/', '_')}.conf")
    assert not (set(prj) | set(fragment)) - verified_symbols()
    assert prj["SERIAL"] == "y" and prj["UART_INTERRUPT_DRIVEN"] == "y"  # the protocol's bytes arrive by interrupt
    assert prj["BOOT_BANNER"] == "n" and prj["LOG"] == "n"  # nothing unrequested on the runner's line
    assert "MLPerf Tiny DUT protocol" in (d / "prj.conf").read_text()
    assert "reports its high-water mark" not in (d / "prj.conf").read_text()  # it does not
    assert (fragment.get("TIMING_FUNCTIONS") == "y") == (not board.emulated)  # DWT cycles on hardware

    # one firmware source: the bare-metal variant's main.c, word for word (boards with a bare-metal platform)
    main = (d / "src" / "main.c").read_text()
    assert "mc_mlperf_dut_serve()" in main and "<zephyr/" not in main
    if board.platform is not None:
        bare = create_project(kws, "mlperf", board, tmp_path / "b", benchmark="kws01")
        assert (bare.dir / "src" / "main.c").read_text() == main


def _kconfig_defines(project_dir: Path, board) -> list[str]:
    """-DCONFIG_X=1 for every CONFIG_X=y of prj.conf and the board fragment, as Zephyr's autoconf.h."""
    fragment = project_dir / "boards" / f"{board.zephyr_board.replace('/', '_')}.conf"
    assignments = {**kconfig_assignments(project_dir / "prj.conf"), **kconfig_assignments(fragment)}
    return [f"-DCONFIG_{name}=1" for name, value in assignments.items() if value == "y"]


def _compile(sources: list[Path], defines: list[str], includes: list[Path], exe: Path) -> Path:
    from microcompiler.host import SANITIZE_CFLAGS, STRICT_CFLAGS, compiler

    proc = subprocess.run(
        [
            *compiler(),
            *STRICT_CFLAGS,
            *SANITIZE_CFLAGS,
            *defines,
            *(f"-I{d}" for d in includes),
            *map(str, sources),
            str(FAKE_ZEPHYR / "fake_zephyr.c"),
            "-lm",
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return exe


def _host_program(project, exe: Path) -> Path:
    """The whole Zephyr application (main.c, the model, crt, crt/platform/zephyr/platform.c) as the
    project's CMakeLists.txt and Kconfig have it, strict flags, ASan and UBSan, over the fake Zephyr."""
    d = project.dir
    cmake = (d / "CMakeLists.txt").read_text()
    sources = [d / s for s in re.findall(r"^\s+((?:model|crt|src)/\S+\.c)$", cmake, re.M)]
    defines = _kconfig_defines(d, project.board) + re.findall(r"target_compile_definitions\(app PRIVATE (\S+)\)", cmake)
    return _compile(
        sources,
        [flag if flag.startswith("-D") else f"-D{flag}" for flag in defines],
        [FAKE_ZEPHYR, d / "crt" / "include", d / "crt" / "platform" / "zephyr", d / "model" / "include"],
        exe,
    )


@pytest.mark.parametrize("board_name", ["mps2_an385", "nucleo_l4r5zi"])  # the system timer; the timing API
def test_zephyr_application_answers_the_protocol_with_tflm_scores(board_name, kws, tmp_path):
    project = create_project(kws, TEMPLATE, board_name, tmp_path / "z", benchmark="kws01")
    exe = _host_program(project, tmp_path / "dut")
    data = np.random.default_rng(11).integers(-128, 128, 490, dtype=np.int8).tobytes()
    commands = ["name", "profile", "db load 490"] + ["db " + data[i : i + 38].hex() for i in range(0, 490, 38)]
    commands += ["infer 2 1", "db 0g", "timestamp"]
    proc = subprocess.run(
        [str(exe)], input="".join(c + "%" for c in commands).encode(), capture_output=True, timeout=120
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    lines = proc.stdout.decode().split("\r\n")
    assert lines[:3] == ["m-timestamp-mode-performance", "m-init-done", "m-ready"]
    assert f"m-name-dut-[microcompiler kws_ref_model on {board_name}]" in lines and "m-model-[kws01]" in lines
    assert lines.count("m-load-done") == 1 and "e-[Invalid hex digit: g]" in lines
    laps = [int(line[len("m-lap-us-") :]) for line in lines if line.startswith("m-lap-us-")]
    assert len(laps) == 3 and laps[0] < laps[1] <= laps[2]  # the fake clock moves with every read
    results = [line for line in lines if line.startswith("m-results-[")]
    assert len(results) == 1
    scores = np.array([float(x) for x in results[0][len("m-results-[") : -1].split(",")], np.float32)
    bench = BENCHMARKS["kws01"]
    want = expected_scores(
        bench, data, Oracle(kws.read_bytes()).run([model_input(bench, data, project.info)])[0], project.info
    )
    assert np.array_equal(scores, want.astype(np.float32)), (scores, want)


@pytest.mark.parametrize("config", ["CONFIG_TIMING_FUNCTIONS", "CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER", None])
def test_zephyr_platform_timer_survives_the_counter_wraps(config, tmp_path):
    """crt/platform/zephyr's three timers over fake counters: spans across the 32-bit count's wrap, and
    (the system timer) spans longer than it, are measured exactly. The DUT folds the timer into its
    64-bit clock after every inference and every idle second, so with these no window wraps it."""
    crt = ROOT / "crt"
    defines = ["-DFAKE_ZEPHYR_TIMER_TEST"] + ([f"-D{config}=1"] if config else [])
    exe = _compile(
        [crt / "platform" / "zephyr" / "platform.c", crt / "src" / "report.c", crt / "src" / "status.c"],
        defines,
        [FAKE_ZEPHYR, crt / "include", crt / "platform" / "zephyr"],
        tmp_path / "timer",
    )
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "hz 25000000"
    spans = [tuple(map(int, re.fullmatch(r"span (\d+) elapsed (\d+)", line).groups())) for line in lines[1:]]
    assert len(spans) == (3 if config == "CONFIG_TIMING_FUNCTIONS" else 5)  # the DWT count: at most one wrap
    assert max(span for span, _ in spans) >= (1 << 32) - 1
    for span, elapsed in spans:
        assert elapsed == span


def test_mlperf_command_on_zephyr_without_west_is_one_line(kws, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ZEPHYR_BASE", "PATH")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "mlperf",
            str(kws),
            "--benchmark",
            "kws01",
            "--board",
            "mps2_an385",
            "--template",
            TEMPLATE,
            "-o",
            str(tmp_path / "p"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**env, "PATH": str(empty), "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'west' is not on PATH" in lines[0] and "pip install west" in lines[0]


def test_zephyr_board_without_zephyr_name_is_refused(kws, tmp_path):
    toml = (ROOT / "boards" / "mps2_an385.toml").read_text()
    toml = re.sub(r"\[zephyr\][^\[]*", "", toml).replace('name = "mps2_an385"', 'name = "no_zephyr"')
    board_file = tmp_path / "no_zephyr.toml"
    board_file.write_text(toml)
    with pytest.raises(zephyr.ZephyrBoardError, match="has no Zephyr board name"):
        create_project(kws, TEMPLATE, load_board(str(board_file)), tmp_path / "p", benchmark="kws01")


# ---- The real thing, where Zephyr is installed ----


def _missing() -> str:
    missing = [
        what
        for what, ok in (
            ("west (pip install west)", shutil.which("west")),
            ("ZEPHYR_BASE (a Zephyr workspace)", os.environ.get("ZEPHYR_BASE")),
            ("qemu-system-arm", shutil.which("qemu-system-arm")),
        )
        if not ok
    ]
    return ", ".join(missing)


# The official runner against Zephyr firmware in QEMU: with the long tests (pytest -m long tests); the default
# suite drives the bare-metal MLPerf firmware with it (test_mlperf.py) and builds Zephyr on every board.
@pytest.mark.long
@pytest.mark.skipif(bool(_missing()), reason=f"needs {_missing()}; see docs/zephyr.md")
def test_official_runner_against_zephyr_firmware_in_qemu(kws, tmp_path):
    from microcompiler.mlperf_runner import check_runner_dir, default_runner_dir, make_stand_in_datasets, run_runner
    from microcompiler.project import build

    runner_dir = check_runner_dir(default_runner_dir())
    datasets = make_stand_in_datasets(runner_dir, tmp_path / "datasets")
    project = create_project(kws, TEMPLATE, "mps2_an385", tmp_path / "z", benchmark="kws01")
    built = build(project.dir, log=lambda _: None)
    for mode in ("p", "a"):
        result = run_runner(
            runner_dir,
            tmp_path / mode,
            mode=mode,
            dataset=datasets,
            elf=built.elf,
            qemu_machine=project.board.qemu_machine,
            timeout=600,
        )
        assert (result.median_throughput or 0) > 0 if mode == "p" else result.top1 is not None
        entries = json.loads((result.session_dir / "results.json").read_text())
        oracle, bench = Oracle(kws.read_bytes()), BENCHMARKS["kws01"]
        for entry in (e for e in entries if "infer" in e and "file" in e):
            data = (datasets / "kws01" / entry["file"]).read_bytes()
            want = expected_scores(bench, data, oracle.run([model_input(bench, data, project.info)])[0], project.info)
            assert np.array_equal(np.array(entry["infer"]["results"], np.float32), want.astype(np.float32))
