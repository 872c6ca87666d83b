"""Zephyr on the emulated Cortex-M0 and Cortex-M33 boards Zephyr itself defines: qemu_cortex_m0
(nRF51822, 16 KB of RAM, QEMU microbit) and mps2/an521/cpu0 (Cortex-M33 without FPU and DSP, as
Zephyr builds CPU0, QEMU mps2-an521). Outputs bit-exact with the TFLite Micro interpreter
(tests/oracle.py); the portable kernels (no SMLAD) on cores without the DSP extension; what fits in
16 KB said before building and by the link (docs/zephyr.md, "Small boards").

The default suite builds one firmware (hello_world_int8 standalone on qemu_cortex_m0, ~1 min with
ccache); the rest is `long` (`pytest -m long tests/test_zephyr_small_boards.py`).
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from firmware_checks import smlad_count
from oracle import Oracle
from small_board_models import micro_speech_like

from microcompiler.boards import load_board
from microcompiler.compiler import compile_model
from microcompiler.errors import BoardError
from microcompiler.inputs import random_inputs
from microcompiler.targets import zephyr, zephyr_memory
from microcompiler.targets.base import HOST_DRIVEN, STANDALONE, create_options, get_target
from microcompiler.targets.footprint import ram_for_models
from microcompiler.timing import describe, measured
from microcompiler.zephyr import board_facts, workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import lookalikes  # noqa: E402

M0 = "qemu_cortex_m0"
M33 = "mps2/an521/cpu0"


def _workspace():
    try:
        return zephyr.zephyr_base()
    except workspace.ZephyrBaseError:
        return None


needs_zephyr = pytest.mark.skipif(
    _workspace() is None or not all(shutil.which(t) for t in ("west", "cmake", "qemu-system-arm")),
    reason="needs a Zephyr workspace, west, cmake and qemu-system-arm (docs/zephyr.md)",
)


def _run_bit_exact(model, board_name: str, mode: str, tmp_path, seed: int = 3):
    """Build and run ``model`` on the Zephyr board in QEMU; its outputs must equal TFLM's. Returns
    (board, library, RunResult)."""
    board = load_board(board_name)
    library = compile_model(model, features=board.cpu.features)
    inputs = random_inputs(library.info.inputs, seed=seed)
    want = Oracle(open(model, "rb").read()).run(inputs)
    _, built, result = zephyr.run_on_board(
        library, board, tmp_path / "p", mode=mode, input=inputs, log=lambda _: None, timeout=900
    )
    assert len(result.outputs) == len(want)
    for got, expected in zip(result.outputs, want):
        np.testing.assert_array_equal(got, np.asarray(expected).reshape(got.shape))
    assert result.ticks > 0 and 0 < built.ram_bytes <= board.ram.size
    elf = tmp_path / "p" / "build" / "zephyr" / "zephyr.elf"
    assert smlad_count(elf) == 0, "a core without the DSP extension runs the portable kernels"
    return board, library, result


# ---- what the small board's project is made of (no build) ----


@needs_zephyr
def test_qemu_cortex_m0_is_described_with_qemus_clock_and_no_dsp():
    board = load_board(M0)
    # no DSP, no FPU, and no 32 x 32 -> 64 multiply (Armv6-M): the kernels plan the int32 paths
    assert board.cpu.core == "cortex-m0" and board.cpu.features == {"no_long_multiply"} and board.ram.size == 16 * 1024
    # the devicetree gives no CPU clock and Zephyr's 1 MHz is the nRF TIMER's: QEMU runs the nRF51 at 16 MHz
    assert board.cpu.clock_hz == board_facts.QEMU_CPU_CLOCKS["microbit"] == 16_000_000
    assert zephyr_memory.small_board(board) and zephyr_memory.kernel_ram_bytes(board) < 4096
    m33 = load_board(M33)
    assert m33.cpu.core == "cortex-m33" and "dsp" not in m33.cpu.features and not m33.cpu.has_fpu
    assert m33.cpu.clock_hz == 20_000_000 and zephyr_memory.kernel_ram_bytes(m33) == zephyr_memory.KERNEL_RAM_BYTES


def test_an_emulated_board_without_a_clock_shows_instructions_not_a_made_up_time():
    board = load_board("mps2_an385")
    unknown = dataclasses.replace(board, cpu=dataclasses.replace(board.cpu, clock_hz=0))
    time = measured(250, 1_000_000, unknown)
    assert time["instructions"] == 250_000 and time["seconds"] != time["seconds"]  # NaN
    assert describe(time) == "250,000 instructions"
    assert "25 MHz" in describe(measured(250, 1_000_000, board))


@needs_zephyr
@pytest.mark.parametrize("mode", [STANDALONE, HOST_DRIVEN])
def test_small_board_project_has_small_stack_and_buffers(mode, shared_models, tmp_path):
    hello = compile_model(shared_models / "tflm" / "hello_world_int8.tflite")
    small, big = load_board(M0), load_board("mps2_an385")
    project = get_target("zephyr").create(hello, small, tmp_path / "p", mode=mode)
    prj = (project.dir / "prj.conf").read_text()
    cmake = (project.dir / "CMakeLists.txt").read_text()
    stack = zephyr.main_stack_bytes(hello.info, mode, small)
    assert f"CONFIG_MAIN_STACK_SIZE={stack}\n" in prj and stack < zephyr.main_stack_bytes(hello.info, mode, big)
    if mode == STANDALONE:  # it only writes: no receive buffer to speak of
        assert f"MC_ZEPHYR_RX_BUFFER_BYTES={zephyr_memory.STANDALONE_RX_BUFFER_BYTES})" in cmake
        assert "MC_RPC_MAX_PAYLOAD" not in cmake
    else:
        assert "MC_ZEPHYR_RX_BUFFER_BYTES=1024)" in cmake and "MC_RPC_MAX_PAYLOAD=256)" in cmake
        assert "+ 512u)" in (project.dir / "src" / "main.c").read_text()  # the pool's headroom
        big_project = get_target("zephyr").create(hello, big, tmp_path / "q", mode=mode)
        assert "MC_ZEPHYR_RX_BUFFER_BYTES=4096)" in (big_project.dir / "CMakeLists.txt").read_text()


@needs_zephyr
def test_an521_fragment_sets_the_systick_rate_qemu_runs_at(shared_models, tmp_path):
    hello = compile_model(shared_models / "tflm" / "hello_world_int8.tflite")
    project = get_target("zephyr").create(hello, load_board(M33), tmp_path / "p")
    fragment = (project.dir / "boards" / "mps2_an521_cpu0.conf").read_text()
    assert "CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC=20000000\n" in fragment  # Zephyr says 25 MHz; QEMU counts 20
    assert "CONFIG_FPU" not in fragment
    m0 = get_target("zephyr").create(hello, load_board(M0), tmp_path / "q")
    assert "SYS_CLOCK_HW_CYCLES_PER_SEC" not in (m0.dir / "boards" / "qemu_cortex_m0.conf").read_text()  # nRF TIMER


@needs_zephyr
def test_what_fits_in_16_kb_is_said_before_building(tmp_path):
    board = load_board(M0)
    # analyze and the default --ram-limit count Zephyr's kernel, main stack and buffers
    assert ram_for_models(board) == board.ram.size - zephyr_memory.system_ram_bytes(board) - 1024
    model = tmp_path / "ms.tflite"
    model.write_bytes(micro_speech_like())
    library = compile_model(model, ram_available=ram_for_models(board))
    target = get_target("zephyr")
    target.create(library, board, tmp_path / "standalone")  # fits: ~11 KB
    with pytest.raises(BoardError, match=r"needs about [\d,]+ B of RAM .* qemu_cortex_m0 has 16,384 B"):
        target.create(library, board, tmp_path / "host-driven", mode=HOST_DRIVEN)  # + the RPC pool: does not


def test_zephyr_base_is_passed_only_to_the_targets_that_record_it(tmp_path):
    assert create_options(get_target("zephyr"), tmp_path) == {"zephyr_base": tmp_path}
    assert create_options(get_target("baremetal"), tmp_path) == {}
    assert create_options(get_target("zephyr"), None) == {}


# ---- builds and runs ----


@pytest.mark.long  # a whole Zephyr build (kernel + picolibc) for the M0: 30-80 s; the suite is at its budget
@needs_zephyr
def test_hello_world_on_qemu_cortex_m0_is_bit_exact(shared_models, tmp_path):
    board, _, result = _run_bit_exact(shared_models / "tflm" / "hello_world_int8.tflite", M0, STANDALONE, tmp_path)
    assert result.hz == 1_000_000  # the nRF TIMER Zephyr ticks with
    assert "at 16 MHz" in describe(measured(result.ticks, result.hz, board))


@needs_zephyr
@pytest.mark.long
def test_hello_world_on_qemu_cortex_m0_host_driven_is_bit_exact(shared_models, tmp_path):
    _run_bit_exact(shared_models / "tflm" / "hello_world_int8.tflite", M0, HOST_DRIVEN, tmp_path)


@needs_zephyr
@pytest.mark.long
def test_micro_speech_sized_model_on_qemu_cortex_m0_is_bit_exact(tmp_path):
    model = tmp_path / "ms.tflite"
    model.write_bytes(micro_speech_like())
    _, library, _ = _run_bit_exact(model, M0, STANDALONE, tmp_path)
    assert library.info.params_bytes > 16 * 1024
    assert all(dict(op.kernel).get("isa") in (None, "c") for op in library.info.operators)


@needs_zephyr
@pytest.mark.long
def test_micro_speech_lookalike_on_qemu_cortex_m0_runs_the_rows_kernel_bit_exact(tmp_path):
    """The benchmarks' micro_speech look-alike (a 10x8 depthwise layer of depth multiplier 8): the M0
    has no long multiply, so the layer is planned as the rows kernel its C runs, without the 3,520 B
    ring of packed rows (12,467 -> 8,963 B of RAM linked; the same flash and instructions)."""
    _, library, _ = _run_bit_exact(lookalikes.write("micro_speech", tmp_path), M0, STANDALONE, tmp_path)
    kernel = next(op.kernel for op in library.info.operators if op.kind == "DEPTHWISE_CONV_2D")
    assert dict(kernel)["variant"] == "rows" and library.info.scratch_bytes < 3520


@needs_zephyr
@pytest.mark.long
@pytest.mark.parametrize("mode", [STANDALONE, HOST_DRIVEN])
def test_kws_on_zephyr_an521_cpu0_is_bit_exact(mode, shared_models, tmp_path):
    _run_bit_exact(shared_models / "mlperf_tiny" / "kws_ref_model.tflite", M33, mode, tmp_path, seed=7)
