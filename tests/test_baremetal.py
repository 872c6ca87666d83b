"""Bare-metal firmware on the emulated boards: build with CMake + Ninja, run in QEMU, compare.

Every int8 and float shared model runs on every emulated board with both executors (about two
minutes on two cores; MICROCOMPILER_QUICK_MATRIX=1 keeps the graph executor to one board per
model); outputs must equal the host build's bit for bit. Builds are shared per (model, board,
executor) and made two at a time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from microcompiler.boards import load_board
from microcompiler.compiler import compile_model
from microcompiler.errors import BoardError, DeviceError
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.project import BuildResult, RunResult, build, check_fits, create_project, flash

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")),
    reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm",
)

BOARDS = ["mps2_an385", "mps2_an386", "mps2_an500", "mps3_an547"]
# Boards whose share of the matrix (the aot executor) is a long test (tests/test_mps2_an521.py runs
# KWS on the Cortex-M33 in the default suite); the timer check runs on them in the default suite too.
LONG_BOARDS = ["mps2_an521"]
MODELS = [
    "tflm/hello_world_int8",
    "tflm/hello_world_float",
    "mlperf_tiny/ad01_int8",
    "mlperf_tiny/kws_ref_model",
    "mlperf_tiny/pretrainedResnet_quant",
    "mlperf_tiny/pretrainedResnet",
]
QUICK_MATRIX = os.environ.get("MICROCOMPILER_QUICK_MATRIX") == "1"
# In the quick matrix each model runs the graph executor on one board, every board in turn
# (the small hello_world_int8 on all of them).
GRAPH_BOARDS = {
    model: ([BOARDS[k % len(BOARDS)]] if model != "tflm/hello_world_int8" and QUICK_MATRIX else BOARDS)
    for k, model in enumerate(MODELS)
}
# The firmware that runs twice, to check that the time is repeatable: one board per model.
RERUN = {model: BOARDS[(k + 1) % len(BOARDS)] for k, model in enumerate(MODELS)}
RUN_TIMEOUT = 120.0


def _combos(model: str) -> list[tuple[str, str]]:
    return [(board, "aot") for board in BOARDS] + [(board, "graph") for board in GRAPH_BOARDS[model]]


@dataclass
class Firmware:
    board: str
    executor: str
    dir: Path
    built: BuildResult
    run: RunResult
    rerun: RunResult | None


class FirmwareFarm:
    """Builds and runs firmwares in the background, two at a time, each once per session.

    The fixture queues every firmware the selected tests need, in test order, so the two workers
    never wait for the tests; each test then waits for its own firmware.
    """

    def __init__(self, root: Path, models_dir: Path):
        self.root = root
        self.models_dir = models_dir
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.jobs: dict[tuple, Future] = {}
        self._metadata: dict[str, dict] = {}

    def model_path(self, model: str) -> Path:
        return self.models_dir / f"{model}.tflite"

    def metadata(self, model: str) -> dict:
        if model not in self._metadata:
            self._metadata[model] = compile_model(self.model_path(model)).metadata
        return self._metadata[model]

    def _firmware(self, model: str, board: str, executor: str) -> Firmware:
        project_dir = self.root / f"{model.replace('/', '_')}-{board}-{executor}"
        project = create_project(self.model_path(model), "baremetal", board, project_dir, executor=executor)
        built = build(project.dir, log=lambda _: None)
        run = flash(project.dir, timeout=RUN_TIMEOUT, log=lambda _: None)
        rerun = None
        if executor == "aot" and RERUN[model] == board:
            rerun = flash(project.dir, timeout=RUN_TIMEOUT, log=lambda _: None)
        return Firmware(board, executor, project.dir, built, run, rerun)

    def _reference(self, model: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """(inputs, outputs) of the host build on the seeded input every firmware compiles in."""
        library = compile_model(self.model_path(model))
        inputs = random_inputs(library.info.inputs)
        program = HostProgram(library, self.root / f"host-{model.replace('/', '_')}")
        return inputs, program.run([inputs])[0].outputs

    def queue(self, model: str, board: str, executor: str) -> None:
        if ("host", model) not in self.jobs:
            self.jobs["host", model] = self.pool.submit(self._reference, model)
        if (model, board, executor) not in self.jobs:
            self.jobs[model, board, executor] = self.pool.submit(self._firmware, model, board, executor)

    def get(self, model: str, board: str, executor: str) -> Firmware:
        self.queue(model, board, executor)
        return self.jobs[model, board, executor].result()

    def reference(self, model: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return self.jobs["host", model].result()


@pytest.fixture(scope="session")
def farm(request, tmp_path_factory, shared_models):
    farm = FirmwareFarm(tmp_path_factory.mktemp("firmware"), shared_models)
    for item in request.session.items:  # the selected tests, in order
        params = getattr(item, "callspec", None) and item.callspec.params
        if item.module.__name__ == __name__ and params and {"model", "board", "executor"} <= params.keys():
            farm.queue(params["model"], params["board"], params["executor"])
    yield farm
    farm.pool.shutdown(wait=True, cancel_futures=True)


def _assert_same(got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: output{k}"
        differ = g.view(np.uint8) != w.view(np.uint8)  # bit for bit, floats included
        assert not differ.any(), (
            f"{what}: output{k} differs from the host build in "
            f"{int(np.count_nonzero(differ))} bytes: {g.ravel()[:8]} vs {w.ravel()[:8]}"
        )


MATRIX = [(m, b, e) for m in MODELS for b, e in _combos(m)] + [
    pytest.param(m, b, "aot", marks=pytest.mark.long) for m in MODELS for b in LONG_BOARDS
]


@pytest.mark.parametrize("model,board,executor", MATRIX)
def test_firmware_matches_host(farm, model, board, executor):
    fw = farm.get(model, board, executor)
    meta = farm.metadata(model)
    board_info = load_board(board)
    assert fw.run.hz == board_info.timer.get("hz")
    assert fw.run.ticks > 0
    assert 0 < fw.run.stack_bytes < 8 * 1024, "the stack high-water mark is inside the stack region"
    flash_size = sum(r.size for r in board_info.memory if r.kind == "flash")
    assert meta["params_bytes"] < fw.built.flash_bytes <= flash_size
    assert meta["arena_bytes"] < fw.built.ram_bytes <= board_info.ram.size
    if fw.rerun is not None:
        assert fw.rerun.ticks == fw.run.ticks, "two runs of one firmware under -icount take the same time"
        _assert_same(fw.rerun.outputs, fw.run.outputs, "rerun")
    inputs, want = farm.reference(model)
    for k, x in enumerate(inputs):
        assert np.array_equal(np.load(fw.dir / "inputs" / f"input{k}.npy"), x), "the firmware's input"
    _assert_same(fw.run.outputs, want, f"{model} on {board} ({executor})")


def test_graph_and_aot_take_similar_time(farm):
    model, board = "mlperf_tiny/ad01_int8", GRAPH_BOARDS["mlperf_tiny/ad01_int8"][0]
    aot, graph = farm.get(model, board, "aot"), farm.get(model, board, "graph")
    # the graph executor adds a table walk and one indirect call per operator
    assert aot.run.ticks <= graph.run.ticks < aot.run.ticks * 1.1


def test_firmware_size_agrees_with_arm_none_eabi_size(farm):
    fw = farm.get("tflm/hello_world_int8", "mps3_an547", "aot")  # weights in their own region
    out = subprocess.run(
        ["arm-none-eabi-size", "-A", str(fw.built.elf)], capture_output=True, text=True, check=True
    ).stdout
    sizes = {
        parts[0]: int(parts[1])
        for parts in (line.split() for line in out.splitlines())
        if len(parts) == 3 and parts[0].startswith(".")
    }
    flash = sum(sizes.get(s, 0) for s in (".weights", ".text", ".ARM.exidx", ".data"))
    ram = sum(sizes.get(s, 0) for s in (".stack", ".data", ".bss"))
    assert sizes[".weights"] > 0 and sizes[".stack"] == 8192
    assert (fw.built.flash_bytes, fw.built.ram_bytes) == (flash, ram)


def test_qemu_transport_reset_runs_the_firmware_again(farm):
    from microcompiler.transport.qemu import QemuTransport

    fw = farm.get("tflm/hello_world_int8", "mps2_an386", "aot")
    end = re.compile(rb"^MC-END[^\n]*\n", re.MULTILINE)
    with QemuTransport.for_board(load_board("mps2_an386"), fw.dir / "build" / "firmware.elf") as link:
        first = link.read_until(end, RUN_TIMEOUT)
        link.reset()
        second = link.read_until(end, RUN_TIMEOUT)
    assert first == second and first.startswith(b"MC-BEGIN\n")


# ---- The timer and the fault handler, on patched firmware ----

CALIBRATION_LOOP = 1_000_000  # iterations of a two-instruction loop


def _patched_project(tmp_path: Path, shared_models: Path, board: str, body: str) -> Path:
    """hello_world_int8 on board, with body inserted at the start of the timed inference."""
    project = create_project(shared_models / "tflm/hello_world_int8.tflite", "baremetal", board, tmp_path / board)
    main = project.dir / "src" / "main.c"
    text = main.read_text()
    infer = "static mc_status_t infer_hello_world_int8(size_t step) {\n"  # project_templates/models/runners.c.j2
    assert infer in text
    main.write_text(text.replace(infer, infer + body, 1))
    return project.dir


@pytest.mark.parametrize("board", BOARDS + LONG_BOARDS)
def test_timer_counts_instructions_at_the_board_rate(tmp_path, shared_models, board):
    """Under -icount shift=0 one instruction is one virtual ns: a known loop checks timer_hz."""
    loop = (
        f'  uint32_t n = {CALIBRATION_LOOP}u;\n  __asm volatile("1: subs %0, %0, #1\\n bne 1b" : "+r"(n) : : "cc");\n'
    )
    project_dir = _patched_project(tmp_path, shared_models, board, loop)
    build(project_dir, log=lambda _: None)
    result = flash(project_dir, timeout=RUN_TIMEOUT, log=lambda _: None)
    instructions = result.ticks * 1e9 / result.hz
    assert 2 * CALIBRATION_LOOP <= instructions < 2 * CALIBRATION_LOOP * 1.01


@pytest.mark.parametrize("board", ["mps2_an385", "mps3_an547"])
def test_fault_is_reported_not_hung(tmp_path, shared_models, board):
    project_dir = _patched_project(tmp_path, shared_models, board, '  __asm volatile("udf #0");\n')
    build(project_dir, log=lambda _: None)
    with pytest.raises(DeviceError, match=r"MC-FAULT UsageFault pc 0x0000[0-9a-f]{4} lr 0x[0-9a-f]{8} sp 0x2000"):
        flash(project_dir, timeout=RUN_TIMEOUT, log=lambda _: None)


def test_stack_overflow_is_reported(tmp_path, shared_models):
    recursion = "  extern uint32_t mc_test_recurse(uint32_t n);\n  (void)mc_test_recurse(100000u);\n"
    project_dir = _patched_project(tmp_path, shared_models, "mps2_an386", recursion)
    main = project_dir / "src" / "main.c"
    main.write_text(
        main.read_text()
        + (
            "uint32_t mc_test_recurse(uint32_t n);\n"
            "__attribute__((noinline)) uint32_t mc_test_recurse(uint32_t n) {\n"
            "  volatile uint8_t pad[256];\n"
            "  pad[0] = (uint8_t)n;\n"
            "  return n == 0u ? pad[0] : mc_test_recurse(n - 1u) + pad[0];\n"
            "}\n"
        )
    )
    build(project_dir, log=lambda _: None)
    with pytest.raises(DeviceError, match=r"MC-FAULT \w+ .* stack-overflow"):
        flash(project_dir, timeout=RUN_TIMEOUT, log=lambda _: None)


# ---- Refusals ----


def _small_board(tmp_path: Path, flash_size: int, ram_size: int) -> Path:
    text = (Path(load_board("mps2_an385").source)).read_text()
    text = text.replace('name = "mps2_an385"', 'name = "small_m3"')
    text = re.sub(r"(kind = \"flash\"\norigin = 0x[0-9a-f]+\nsize = )0x[0-9a-f]+", rf"\g<1>{flash_size}", text)
    text = re.sub(r"(kind = \"ram\"\norigin = 0x[0-9a-f]+\nsize = )0x[0-9a-f]+", rf"\g<1>{ram_size}", text)
    path = tmp_path / "small_m3.toml"
    path.write_text(text)
    board = load_board(str(path))
    assert (board.flash.size, board.ram.size) == (flash_size, ram_size)
    return path


def test_model_too_big_for_flash_is_refused_before_building(tmp_path, shared_models):
    board = _small_board(tmp_path, 256 * 1024, 256 * 1024)
    out = tmp_path / "project"
    with pytest.raises(BoardError) as info:
        create_project(shared_models / "mlperf_tiny/ad01_int8.tflite", "baremetal", str(board), out)
    message = str(info.value)
    assert "270,880 B of flash" in message and "262,144 B" in message and "small_m3" in message
    assert not out.exists(), "nothing is written for a model that does not fit"


def test_model_too_big_for_ram_is_refused(tmp_path, shared_models):
    board = load_board(str(_small_board(tmp_path, 4 * 1024 * 1024, 32 * 1024)))
    meta = compile_model(shared_models / "mlperf_tiny/pretrainedResnet_quant.tflite").info
    with pytest.raises(BoardError, match=r"needs about [\d,]+ B of RAM .* but board small_m3 has 32,768 B"):
        check_fits(meta, board)
    check_fits(meta, load_board("mps2_an385"))  # fits the real board


def test_cli_refuses_too_big_model_in_one_line(tmp_path, shared_models):
    board = _small_board(tmp_path, 128 * 1024, 64 * 1024)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "create-project",
            str(shared_models / "mlperf_tiny/ad01_int8.tflite"),
            "--board",
            str(board),
            "-o",
            str(tmp_path / "p"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "270,880 B" in proc.stderr and "131,072 B" in proc.stderr


def test_linker_overflow_is_a_board_error(tmp_path, shared_models):
    """When the estimate passes but the link does not fit, the error still names the region."""
    board = _small_board(tmp_path, 4 * 1024 * 1024, 64 * 1024)
    project = create_project(
        shared_models / "tflm/hello_world_int8.tflite", "baremetal", str(board), tmp_path / "p", stack_bytes=60 * 1024
    )
    ld = project.dir / "linker.ld"
    ld.write_text(ld.read_text().replace("MC_STACK_BYTES = 61440;", "MC_STACK_BYTES = 70000;"))
    with pytest.raises(BoardError, match=r"memory region RAM overflowed by [\d,]+ B"):
        build(project.dir, log=lambda _: None)


# ---- The command line ----


def test_cli_run_on_emulated_board_prints_sizes_and_time(tmp_path, shared_models):
    import json

    model = shared_models / "tflm/hello_world_int8.tflite"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "run",
            str(model),
            "--board",
            "mps2_an386",
            "--mode",
            "standalone",
            "--executor",
            "graph",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    host = json.loads(
        subprocess.run(
            [sys.executable, "-m", "microcompiler.cli", "run", str(model), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert report["outputs"] == host["outputs"]
    assert report["timer_hz"] == 25_000_000 and report["device_ticks"] > 0
    assert report["flash_bytes"] > report["params_bytes"] and report["ram_bytes"] > report["arena_bytes"]


def test_cli_create_build_flash(tmp_path, shared_models):
    x = np.array([[17]], dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "proj"
    cli = [sys.executable, "-m", "microcompiler.cli"]
    subprocess.run(
        [
            *cli,
            "create-project",
            str(shared_models / "tflm/hello_world_int8.tflite"),
            "--template",
            "baremetal",
            "--board",
            "mps3_an547",
            "-o",
            str(out),
            "--input",
            str(tmp_path / "x.npy"),
        ],
        check=True,
        capture_output=True,
    )
    built = subprocess.run([*cli, "build", str(out)], check=True, capture_output=True, text=True).stdout
    assert "Linking C executable firmware.elf" in built and "flash" in built
    ran = subprocess.run([*cli, "flash", str(out)], check=True, capture_output=True, text=True).stdout
    library = compile_model(shared_models / "tflm/hello_world_int8.tflite")
    want = HostProgram(library, tmp_path / "host").run([[x]])[0].outputs[0]
    assert f"[[{int(want[0, 0])}]]" in ran and " instructions (" in ran and " timer ticks" in ran


def test_hardware_board_needs_zephyr(tmp_path, shared_models):
    with pytest.raises(
        BoardError, match="^board nucleo_l4r5zi has no bare-metal platform family; use --template zephyr$"
    ):  # a board described from the Zephyr workspace: Zephyr only
        create_project(shared_models / "tflm/hello_world_int8.tflite", "baremetal", "nucleo_l4r5zi", tmp_path / "p")
