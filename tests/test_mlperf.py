"""MLPerf Tiny: the mlperf template's firmware, driven by the official runner (unchanged) in QEMU.

For KWS, IC and AD (the reference models) and VWW (a MobileNet-v1 0.25 look-alike, tests/mlperf_models.py)
on mps2_an386: the runner completes performance mode (a median throughput,
which must agree with `microcompiler bench` within 2%) and accuracy mode on the random stand-in
datasets, and every score the firmware returned equals the TFLM interpreter's for that input.
The protocol's error cases are driven over the pty directly. About four minutes on an idle machine.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mlperf_models import vww_mobilenet
from oracle import Oracle

from microcompiler.boards import load_board
from microcompiler.mlperf import BENCHMARKS, expected_scores, model_input
from microcompiler.mlperf_runner import check_runner_dir, default_runner_dir, make_stand_in_datasets, run_runner
from microcompiler.project import Project, build, create_project
from microcompiler.transport.qemu import QemuTransport

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")),
    reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm",
)

BOARD = "mps2_an386"
# The reference models in ../shared/models/mlperf_tiny/; vww01's is a look-alike built here.
MODELS = {"kws01": "kws_ref_model", "ic01": "pretrainedResnet_quant", "ad01": "ad01_int8", "vww01": None}
READY = b"m-ready\r\n"
ROOT = Path(__file__).resolve().parents[1]
# Host seconds per performance window: the runner wants the 5 windows (with their downloads) to take
# >= 10 s; the product's default (3 s) leaves more margin, this keeps the suite short.
WINDOW_SECONDS = 2.4


@pytest.fixture(scope="module")
def runner_dir() -> Path:
    return check_runner_dir(default_runner_dir())


@pytest.fixture(scope="module")
def datasets(runner_dir, tmp_path_factory) -> Path:
    return make_stand_in_datasets(runner_dir, tmp_path_factory.mktemp("datasets"))


# Accuracy mode sends every file; vww01's 27,648-byte downloads are slow over the pty, so its
# accuracy run takes the first files of both classes only (performance mode needs 5 files: all).
ACCURACY_FILES = {"vww01": 2}
# The default suite drives the official runner in accuracy mode on kws01; performance mode
# (the runner's timed loops: 31 s for kws01 alone) and the other benchmarks (ad01's 16 windows per
# file, vww01's 27,648-byte downloads over the pty, ic01's 3,072-byte ones) run with the long tests, pytest -m long tests, to
# keep the suite under 15 minutes.
DEFAULT_PERFORMANCE: set[str] = set()
DEFAULT_ACCURACY = {"kws01"}


def _cases(default: set[str]) -> list:
    return [b if b in default else pytest.param(b, marks=pytest.mark.long) for b in MODELS]


PERFORMANCE_CASES = _cases(DEFAULT_PERFORMANCE)
ACCURACY_CASES = _cases(DEFAULT_ACCURACY)


@pytest.fixture(scope="module")
def accuracy_datasets(datasets, tmp_path_factory) -> Path:
    trimmed = tmp_path_factory.mktemp("accuracy_datasets")
    for folder in datasets.iterdir():
        rows = (folder / "y_labels.csv").read_text().splitlines()[: ACCURACY_FILES.get(folder.name)]
        (trimmed / folder.name).mkdir()
        (trimmed / folder.name / "y_labels.csv").write_text("".join(row + "\n" for row in rows))
        for row in rows:
            shutil.copyfile(folder / row.split(",")[0], trimmed / folder.name / row.split(",")[0])
    return trimmed


@pytest.fixture(scope="module")
def model_file(shared_models, tmp_path_factory):
    """benchmark -> its .tflite: the reference model, or the look-alike (tests/mlperf_models.py)."""

    def get(benchmark: str) -> Path:
        if MODELS[benchmark] is not None:
            return shared_models / "mlperf_tiny" / f"{MODELS[benchmark]}.tflite"
        path = tmp_path_factory.getbasetemp() / "vww_mobilenet.tflite"
        if not path.is_file():
            path.write_bytes(vww_mobilenet())
        return path

    return get


@pytest.fixture(scope="module")
def firmware(model_file, tmp_path_factory):
    """benchmark -> built mlperf project on BOARD (built once per benchmark)."""
    built: dict[str, Project] = {}

    def get(benchmark: str, board: str = BOARD) -> Project:
        if (benchmark, board) not in built:
            model = model_file(benchmark)
            project = create_project(
                model, "mlperf", board, tmp_path_factory.mktemp(f"{benchmark}_{board}"), benchmark=benchmark
            )
            build(project.dir, log=lambda _: None)
            built[(benchmark, board)] = project
        return built[(benchmark, board)]

    return get


def _oracle_scores(project: Project, model: Path, benchmark: str, windows: list[bytes]) -> list[np.ndarray]:
    bench = BENCHMARKS[benchmark]
    oracle = Oracle(model.read_bytes())
    return [
        expected_scores(bench, data, oracle.run([model_input(bench, data, project.info)])[0], project.info)
        for data in windows
    ]


def _assert_scores_equal(got, want, benchmark: str, what: str) -> None:
    got = np.asarray(got, np.float64)
    if BENCHMARKS[benchmark].scores == "MC_MLPERF_SCORES_OUTPUT":
        # dequantized int8 outputs: the printed value (9 significant digits) is the float32 exactly
        assert np.array_equal(got.astype(np.float32), want.astype(np.float32)), f"{what}: {got} != {want}"
    else:  # a mean of squares summed in double on the device: the same up to summation order
        np.testing.assert_allclose(got, want, rtol=1e-8, err_msg=what)  # 9 digits printed


def _runner_windows(result_entries: list[dict], dataset_dir: Path) -> list[tuple[bytes, list[float]]]:
    """(the bytes the runner loaded, the scores the firmware returned) for every inference."""
    seen: dict[str, int] = {}
    pairs = []
    for entry in result_entries:
        if "infer" not in entry or "file" not in entry:
            continue
        data = (dataset_dir / entry["file"]).read_bytes()
        if entry.get("bytes_to_send"):  # ad01: overlapping windows of each file, in order
            segment = seen.get(entry["file"], 0)
            seen[entry["file"]] = segment + 1
            start = segment * int(entry["stride"])
            data = data[start : start + int(entry["bytes_to_send"])]
        pairs.append((data, entry["infer"]["results"]))
    return pairs


def _bench_throughput(model: Path) -> float:
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "bench", str(model), "--board", BOARD, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return 1.0 / json.loads(proc.stdout)["inference"]["seconds"]


@pytest.mark.parametrize("benchmark", PERFORMANCE_CASES)
def test_official_runner_performance_agrees_with_bench(benchmark, firmware, runner_dir, datasets, model_file, tmp_path):
    project = firmware(benchmark)
    result = run_runner(
        runner_dir,
        tmp_path,
        mode="p",
        dataset=datasets,
        elf=project.elf,
        qemu_machine=project.board.qemu_machine,
        timeout=300,
        window_seconds=WINDOW_SECONDS,
    )
    assert "Median throughput is" in result.output and result.median_throughput > 0
    assert (result.session_dir / "results.txt").is_file()
    bench = _bench_throughput(model_file(benchmark))
    assert abs(result.median_throughput - bench) / bench < 0.02, (result.median_throughput, bench)
    # performance mode's windows returned scores too: the TFLM interpreter's for those inputs
    pairs = _runner_windows(json.loads((result.session_dir / "results.json").read_text()), datasets / benchmark)
    assert len(pairs) == 5
    want = _oracle_scores(project, model_file(benchmark), benchmark, [data for data, _ in pairs])
    for k, ((_, got), expected) in enumerate(zip(pairs, want)):
        _assert_scores_equal(got, expected, benchmark, f"window {k}")


@pytest.mark.parametrize("benchmark", ACCURACY_CASES)
def test_official_runner_accuracy_scores_equal_tflm(
    benchmark, firmware, runner_dir, accuracy_datasets, model_file, tmp_path
):
    datasets = accuracy_datasets
    project = firmware(benchmark)
    result = run_runner(
        runner_dir,
        tmp_path,
        mode="a",
        dataset=datasets,
        elf=project.elf,
        qemu_machine=project.board.qemu_machine,
        timeout=300,
    )
    assert result.top1 is not None and re.search(r"Top 1% = [\d.]+", result.output)
    pairs = _runner_windows(json.loads((result.session_dir / "results.json").read_text()), datasets / benchmark)
    files = (datasets / benchmark / "y_labels.csv").read_text().splitlines()
    windows_per_file = 16 if benchmark == "ad01" else 1  # gen_datasets.py: 20 slices, windows of 5
    assert len(pairs) == len(files) * windows_per_file
    want = _oracle_scores(project, model_file(benchmark), benchmark, [data for data, _ in pairs])
    for k, ((_, got), expected) in enumerate(zip(pairs, want)):
        _assert_scores_equal(got, expected, benchmark, f"inference {k}")


class Dut:
    """The firmware's protocol over QEMU's pty, one command at a time."""

    def __init__(self, link: QemuTransport):
        self.link = link
        assert link.read_until(READY, 10).endswith(READY)  # the boot lines

    def __call__(self, command: str, timeout: float = 10.0) -> list[str]:
        self.link.write(command.encode() + b"%")
        reply = self.link.read_until(READY, timeout).decode()
        assert reply.endswith("m-ready\r\n"), reply
        return reply.split("\r\n")[:-2]

    def load(self, data: bytes) -> list[str]:
        assert self(f"db load {len(data)}") == [f"m-[Expecting {len(data)} bytes]"]
        for i in range(0, len(data), 31):
            lines = self("db " + data[i : i + 31].hex())
        return lines


def _errors(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("e-[")]


def test_bad_input_gets_error_lines_and_the_device_keeps_answering(firmware, model_file):
    project = firmware("kws01")
    data = np.random.default_rng(7).integers(-128, 128, 490, dtype=np.int8).tobytes()
    with QemuTransport.for_board(project.board, project.elf) as link:
        dut = Dut(link)
        assert dut("name") == [f"m-name-dut-[microcompiler kws_ref_model on {BOARD}]"]
        assert "m-model-[kws01]" in dut("profile")
        # infer before any db load
        assert _errors(dut("infer 1 0")) == ["e-[No input loaded: send 'db load N' and its bytes first]"]
        assert _errors(dut("results")) == ["e-[No results yet: run 'infer' first]"]
        # a command longer than 80 characters (a db command with 41 bytes of hex)
        assert _errors(dut("db " + "ab" * 41)) == ["e-[Command longer than 80 characters]"]
        assert dut("db load 490") == ["m-[Expecting 490 bytes]"]
        # non-hex digits: refused, nothing stored
        assert _errors(dut("db 12zz")) == ["e-[Invalid hex digit: z]"]
        assert _errors(dut("db 123")) == ["e-[Odd number of hex digits]"]
        assert dut.load(data) == ["m-load-done"]
        # more bytes than announced
        assert _errors(dut("db 00")) == ["e-[More bytes than announced by 'db load']"]
        assert _errors(dut("infer 0 0")) == ["e-[Inference iterations must be >0]"]
        assert _errors(dut("infer x 0")) == ["e-[Inference iterations must be >0]"]
        assert _errors(dut("frobnicate 1")) == ["e-[Unknown command: frobnicate]"]
        assert any("infer N" in line for line in dut("help"))
        # after every error the device still works: an inference on the loaded data, scores = TFLM's
        lines = dut("infer 3 1")
        assert not _errors(lines)
        laps = [int(line[len("m-lap-us-") :]) for line in lines if line.startswith("m-lap-us-")]
        assert len(laps) == 2 and laps[1] > laps[0]
        assert lines[-2] == "m-infer-done" and lines[-1].startswith("m-results-[")
        scores = [float(x) for x in lines[-1][len("m-results-[") : -1].split(",")]
        want = _oracle_scores(project, model_file("kws01"), "kws01", [data])[0]
        _assert_scores_equal(scores, want, "kws01", "after the errors")
        assert dut("results")[-1] == lines[-1]
        stamp = dut("timestamp")
        assert len(stamp) == 1 and int(stamp[0][len("m-lap-us-") :]) >= laps[1]


@pytest.mark.parametrize(
    "board", ["mps2_an385", "mps2_an500", "mps3_an547", pytest.param("mps2_an521", marks=pytest.mark.long)]
)
def test_mlperf_firmware_on_every_emulated_board(board, firmware, model_file):
    """The same protocol on the other emulated boards (other cores, the SSE-300 system timer)."""
    assert load_board(board).emulated
    project = firmware("kws01", board)
    data = np.random.default_rng(3).integers(-128, 128, 490, dtype=np.int8).tobytes()
    with QemuTransport.for_board(project.board, project.elf) as link:
        dut = Dut(link)
        assert dut.load(data) == ["m-load-done"]
        lines = dut("infer 2 0")
    laps = [int(line[len("m-lap-us-") :]) for line in lines if line.startswith("m-lap-us-")]
    assert len(laps) == 2 and laps[1] > laps[0]
    scores = [float(x) for x in lines[-1][len("m-results-[") : -1].split(",")]
    _assert_scores_equal(scores, _oracle_scores(project, model_file("kws01"), "kws01", [data])[0], "kws01", board)


def test_wrong_benchmark_for_the_model_is_one_line_error(shared_models, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "create-project",
            str(shared_models / "mlperf_tiny" / "kws_ref_model.tflite"),
            "--template",
            "mlperf",
            "--board",
            BOARD,
            "--benchmark",
            "ic01",
            "-o",
            str(tmp_path / "p"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "ic01" in proc.stderr


FAKE_PLATFORM = ROOT / "tests" / "data" / "mlperf" / "fake_platform_dut.c"


def _host_dut(tmp_path: Path, defines: list[str] = ()) -> Path:
    """crt/src/mlperf_dut.c built for this computer over a fake platform, strict flags, ASan + UBSan."""
    from microcompiler.host import SANITIZE_CFLAGS, STRICT_CFLAGS, compiler

    exe = tmp_path / "dut"
    crt = ROOT / "crt"
    proc = subprocess.run(
        [
            *compiler(),
            *STRICT_CFLAGS,
            *SANITIZE_CFLAGS,
            *defines,
            f"-I{crt / 'include'}",
            str(FAKE_PLATFORM),
            str(crt / "src" / "mlperf_dut.c"),
            str(crt / "src" / "status.c"),
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return exe


def _talk(exe: Path, commands: list[str]) -> list[list[str]]:
    """Each command's answer lines (the boot lines first), from one run of the host DUT."""
    proc = subprocess.run(
        [str(exe)], input="".join(c + "%" for c in commands).encode(), capture_output=True, timeout=60
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    answers, current = [], []
    for line in proc.stdout.decode().split("\r\n"):
        current.append(line)
        if line == "m-ready":
            answers.append(current)
            current = []
    answers.append(current)  # what follows the last answer: the idle clock line
    return answers


def test_clock_is_extended_past_the_hardware_counter_and_errors_on_host(tmp_path):
    """A window of 5 inferences of 120 s each (3e9 ticks at 25 MHz: the 32-bit count wraps after 172 s)."""
    exe = _host_dut(tmp_path)
    data = bytes(range(256)) + bytes(range(234))
    commands = ["db load 490"] + ["db " + data[i : i + 31].hex() for i in range(0, 490, 31)]
    answers = _talk(
        exe, ["infer 1 0", *commands, "infer 5 1", "db 0g", "db " + "0" * 81, "infer 0 0", "results", "timestamp"]
    )
    assert answers[0][-1] == "m-ready"  # boot
    assert answers[1][0] == "e-[No input loaded: send 'db load N' and its bytes first]"
    infer = answers[2 + len(commands)]
    laps = [int(line[len("m-lap-us-") :]) for line in infer if line.startswith("m-lap-us-")]
    assert laps[1] - laps[0] == 5 * 120_000_000
    scores = [float(x) for x in infer[-2][len("m-results-[") : -1].split(",")]
    want = [(np.float32(np.int8(data[i]) - (-2)) * np.float32(0.25)) for i in range(12)]
    assert scores == [float(w) for w in want]
    errors = [a[0] for a in answers[3 + len(commands) : 7 + len(commands)]]
    assert errors == [
        "e-[Invalid hex digit: g]",
        "e-[Command longer than 80 characters]",
        "e-[Inference iterations must be >0]",
        infer[-2],
    ]
    stamp = int(answers[-2][0][len("m-lap-us-") :])
    assert stamp == laps[1]  # nothing ran since the window's end
    assert answers[-1] == [f"idle-us-{stamp + 2 * 120_000_000}\n"]


def test_ad01_float_windows_quantized_and_scored_on_host(tmp_path):
    """ad01's conversion: float32 window -> int8 with the input's scale/zero point; score = MSE."""
    exe = _host_dut(
        tmp_path,
        [
            "-DFORMAT=MC_MLPERF_INPUT_FLOAT32",
            "-DSCORES=MC_MLPERF_SCORES_RECONSTRUCTION",
            "-DELEMENTS=6u",
            "-DOUTPUTS=6u",
        ],
    )
    window = np.array([0.25, -0.25, 0.75, -1.3, 1000.0, -1000.0], "<f4")  # halves round away from zero; clamps
    answers = _talk(exe, ["db load 24", "db " + window.tobytes().hex(), "infer 1 0"])
    assert answers[2][0] == "m-load-done"
    score = float(answers[3][-2][len("m-results-[") : -1])
    from microcompiler.mlperf import quantize_window

    q = quantize_window(window, 0.5, 3)  # the fake model's input quantization
    assert list(q) == [4, 2, 5, 0, 127, -128]
    reconstruction = (q.astype(np.int32) + 2).astype(np.float32) * np.float32(0.25)  # output = input, zp -2
    difference = (window - reconstruction).astype(np.float64)
    assert score == pytest.approx(np.mean(difference * difference), rel=1e-8)


def test_uint8_pixels_become_x_minus_128_on_host(tmp_path):
    """ic01/vww01's conversion (as mlcommons/tiny's reference submission): int8 = uint8 - 128."""
    exe = _host_dut(
        tmp_path,
        ["-DFORMAT=MC_MLPERF_INPUT_UINT8", "-DSCORES=MC_MLPERF_SCORES_OUTPUT", "-DELEMENTS=5u", "-DOUTPUTS=5u"],
    )
    pixels = bytes([0, 1, 127, 128, 255])
    answers = _talk(exe, ["db load 5", "db " + pixels.hex(), "infer 1 0", "db load 6"])
    scores = [float(x) for x in answers[3][-2][len("m-results-[") : -1].split(",")]
    # the fake model copies its input; the output is dequantized with scale 0.25, zero point -2
    assert scores == [(p - 128 + 2) * 0.25 for p in pixels]
    assert answers[4][0] == "e-[Command 'db load' asks for more bytes than this benchmark's input buffer holds]"


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--board", "nucleo_l4r5zi"], "is not emulated: give --port"),  # a Zephyr-described board
        (["--board", BOARD, "--runner-dir", "/nonexistent-runner"], "is not an MLPerf Tiny runner folder"),
    ],
)
def test_mlperf_command_refuses_with_one_line(extra, message, shared_models, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "mlperf",
            str(shared_models / "mlperf_tiny" / "kws_ref_model.tflite"),
            "--benchmark",
            "kws01",
            "-o",
            str(tmp_path / "p"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


FAKE_RUNNER = """import pathlib, sys, yaml
# Stands in for run_official_runner.py: records the N of each run; the first run is "too short".
args = dict(a.split("=", 1) for a in sys.argv[1:])
tests = yaml.safe_load(pathlib.Path(args["--test_script"]).read_text())
record = pathlib.Path(__file__).parent / "runs.txt"
runs = record.read_text().split() if record.is_file() else []
n = next(iter(tests["kws01"]["script"][0].values()))[1].split()[1]
record.write_text(" ".join(runs + [n]))
if not runs:
    print("ERROR 2 - loop exited before 10 seconds elapsed.")
else:
    print("Median throughput is 264.555 inf./sec.")
    print("Session logged in file sessions/fake/log.txt")
"""


def test_windows_too_short_for_the_runner_run_again_with_more_inferences(firmware, runner_dir, datasets, tmp_path):
    """The host ran faster than when QEMU was timed (the runner's ERROR 2): N doubles, the runner runs again."""
    fake = tmp_path / "fake_runner"
    shutil.copytree(runner_dir, fake, ignore=shutil.ignore_patterns("sessions", "__pycache__"))
    (fake / "run_official_runner.py").chmod(0o644)
    (fake / "run_official_runner.py").write_text(FAKE_RUNNER)
    project = firmware("kws01")
    logged: list[str] = []
    result = run_runner(
        fake,
        tmp_path / "work",
        mode="p",
        dataset=datasets,
        elf=project.elf,
        qemu_machine=project.board.qemu_machine,
        timeout=120,
        window_seconds=1.0,
        log=logged.append,
    )
    first, second = map(int, (fake / "runs.txt").read_text().split())
    assert second == 2 * first and result.median_throughput == 264.555 and not result.errors
    assert any(f"again with {second} inferences per window" in line for line in logged)
