"""Board descriptions, the fit check, and the transports (no toolchain or QEMU needed)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from microcompiler.boards import Board, list_boards, load_board, probe_usb_ids
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import BoardError, DeviceError, ToolchainError
from microcompiler.project import check_fits, create_project, estimate_footprint
from microcompiler.transport.base import Transport
from microcompiler.transport.qemu import qemu_command

EMULATED = {
    "mps2_an385": ("cortex-m3", "mps2-an385"),
    "mps2_an386": ("cortex-m4", "mps2-an386"),
    "mps2_an500": ("cortex-m7", "mps2-an500"),
    "mps3_an547": ("cortex-m55", "mps3-an547"),
    "mps2_an521": ("cortex-m33", "mps2-an521"),
}
# Emulated boards without a Zephyr board in their file, and the (flash, RAM) origins of the boards
# that boot Secure on an ARMv8-M SSE and use the Secure aliases.
BAREMETAL_ONLY = {"mps2_an521"}
SECURE_ORIGINS = {"mps2_an521": (0x10000000, 0x38000000)}
# The hardware boards are Zephyr board targets, described from the workspace (tests/test_zephyr_boards.py)
HARDWARE = "nucleo_l4r5zi"


def test_known_boards_are_all_there():
    names = {b.name for b in list_boards()}
    assert set(EMULATED) <= names
    for board in list_boards():
        assert board.source.stem == board.name, "the file name is the board name"


@pytest.mark.parametrize("name", sorted(EMULATED))
def test_emulated_board(name):
    board = load_board(name)
    core, machine = EMULATED[name]
    assert board.emulated and board.qemu_machine == machine
    assert board.cpu.core == core and f"-mcpu={core}" in board.cpu.cflags and "-mthumb" in board.cpu.cflags
    assert board.platform == "cmsdk" and board.uart.kind == "cmsdk"
    assert board.timer.kind in ("cmsdk", "sse_system_timer") and board.timer.get("hz") > 0
    assert bool(board.zephyr_board) == (name not in BAREMETAL_ONLY) and not board.usb_ids and board.runner is None
    assert (board.flash.origin, board.ram.origin) == SECURE_ORIGINS.get(name, (0, 0x20000000))
    # Cortex-M3 has neither DSP instructions nor an FPU; the others have both.
    assert ("dsp" in board.cpu.features) == (core != "cortex-m3")
    assert board.cpu.has_fpu == (core != "cortex-m3")
    assert "-mfloat-abi=soft" in board.cpu.cflags if core == "cortex-m3" else "-mfloat-abi=hard" in board.cpu.cflags


def test_mps2_peripherals_are_the_qemu_ones():
    board = load_board("mps2_an386")
    assert (board.uart.base, board.timer.base, board.timer.get("hz")) == (0x40004000, 0x40000000, 25_000_000)
    an547 = load_board("mps3_an547")
    assert an547.uart.base == 0x49303000 and an547.weights_region.name == "SRAM"
    assert "mve" in an547.cpu.features


def test_mps2_an521_is_the_m33_with_qemus_cpu0_given_fpu_and_dsp():
    board = load_board("mps2_an521")
    assert board.cpu.fpu == "fpv5-sp-d16" and board.cpu.features == {"dsp", "fpu"}
    assert (board.uart.base, board.timer.base, board.timer.get("hz")) == (0x50200000, 0x50000000, 20_000_000)
    assert board.qemu_args == ("-global", "sse-200.CPU0_FPU=on", "-global", "sse-200.CPU0_DSP=on")
    command = qemu_command(board.qemu_machine, "fw.elf", "q.sock", machine_args=board.qemu_args)
    assert command[:7] == ["qemu-system-arm", "-M", "mps2-an521", *board.qemu_args]
    assert command[command.index("-icount") + 1] == "shift=0" and "-S" in command
    assert load_board("mps2_an386").qemu_args == ()


def test_hardware_board():
    board = load_board(HARDWARE)  # described from the Zephyr workspace (cached)
    assert not board.emulated and board.platform is None and board.source is None
    assert board.zephyr_board == HARDWARE and "0483:374b" in board.usb_ids and board.runner == "stm32cubeprogrammer"
    assert (board.flash.origin, board.flash.size, board.ram.size) == (0x08000000, 2048 * 1024, 640 * 1024)
    assert "dsp" in board.cpu.features and board.cpu.has_fpu and board.cpu.fpu == "fpv4-sp-d16"


def test_unknown_board_lists_the_known_ones():
    with pytest.raises(BoardError) as info:
        load_board("mps2_an999")
    message = str(info.value)
    assert message.startswith("unknown board 'mps2_an999'; known boards: host, ")
    assert all(name in message for name in EMULATED)


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "microcompiler.cli", *args], capture_output=True, text=True)


def test_cli_unknown_board_is_one_line(shared_models):
    proc = _cli("run", str(shared_models / "tflm/hello_world_int8.tflite"), "--board", "nope")
    assert proc.returncode == 2 and proc.stdout == ""
    assert re.fullmatch(r"microcompiler: error: unknown board 'nope'; known boards: .*\n", proc.stderr)


def test_cli_boards_lists_every_board():
    proc = _cli("boards")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["BOARD", "CPU", "FLASH", "RAM", "KIND"]
    rows = {line.split()[0]: line for line in lines[1:]}
    for name, (core, machine) in EMULATED.items():
        assert core in rows[name] and f"emulated ({machine})" in rows[name]
    assert "4 MiB" in rows["mps2_an385"] and "512 KiB" in rows["mps3_an547"] and "host" in rows


def _write_board(tmp_path: Path, text: str) -> str:
    path = tmp_path / "custom.toml"
    path.write_text(text)
    return str(path)


BASE = """name = "custom"
[cpu]
core = "cortex-m4"
clock_hz = 1
[[memory]]
name = "FLASH"
kind = "flash"
origin = 0
size = 1024
[[memory]]
name = "RAM"
kind = {ram_kind}
origin = 0x20000000
size = 1024
"""


def test_board_file_errors_are_board_errors(tmp_path):
    assert load_board(_write_board(tmp_path, BASE.format(ram_kind='"ram"'))).name == "custom"
    with pytest.raises(BoardError, match="has kind 'sram'; use 'flash' or 'ram'"):
        load_board(_write_board(tmp_path, BASE.format(ram_kind='"sram"')))
    with pytest.raises(BoardError, match="missing 'cpu'"):
        load_board(_write_board(tmp_path, 'name = "x"\n'))
    with pytest.raises(BoardError, match="cannot read board file"):
        load_board(_write_board(tmp_path, "name = \n"))
    with pytest.raises(BoardError, match=r"\[qemu\]: 'args' must be a list of strings .*got '-global x'"):
        load_board(
            _write_board(tmp_path, BASE.format(ram_kind='"ram"') + '[qemu]\nmachine = "m"\nargs = "-global x"\n')
        )
    with pytest.raises(BoardError, match="has no flash region"):
        load_board(_write_board(tmp_path, BASE.format(ram_kind='"ram"').replace('kind = "flash"', 'kind = "ram"')))


# ---- Does it fit ----

META = ModelInfo.from_json(
    {
        "name": "m",
        "params_bytes": 300_000,
        "arena_bytes": 50_000,
        "operators": [{"index": k, "kind": "ADD", "function": f"m_add_{k}", "macs": 0} for k in range(10)],
        "inputs": [{"name": "x", "c_name": "input0", "shape": [1000], "dtype": "int8", "bytes": 1000}],
        "outputs": [{"name": "y", "c_name": "output0", "shape": [10], "dtype": "int8", "bytes": 10}],
    }
)


def test_fit_estimate_adds_code_input_outputs_and_stack():
    aot = estimate_footprint(META, "aot", 8192)
    assert aot["flash"] > META.params_bytes + 1000
    assert aot["ram"] >= 50_000 + 10 + 8192
    graph = estimate_footprint(META, "graph", 8192)
    assert graph["ram"] >= aot["ram"] + 1000, "the graph pool also holds a copy of the input"


def test_fit_check_names_both_numbers():
    small = load_board("mps3_an547")
    big = dataclasses.replace(META, params_bytes=3_000_000)
    with pytest.raises(
        BoardError,
        match=r"^model m needs 3,000,000 B of flash for weights but board "
        r"mps3_an547 has 2,097,152 B \(SRAM\)$",
    ):
        check_fits(big, small)
    # weights bigger than the ITCM go to the SRAM
    check_fits(dataclasses.replace(META, params_bytes=600_000), small)
    with pytest.raises(BoardError, match=r"needs about [\d,]+ B of RAM .* board nucleo_l4r5zi has 655,360 B"):
        check_fits(dataclasses.replace(META, arena_bytes=700_000), load_board("nucleo_l4r5zi"))


def test_hardware_board_with_baremetal_template_is_refused(tmp_path, shared_models):
    proc = _cli(
        "create-project",
        str(shared_models / "tflm/hello_world_int8.tflite"),
        "--template",
        "baremetal",
        "--board",
        "nucleo_l4r5zi",
        "-o",
        str(tmp_path / "p"),
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "microcompiler: error: board nucleo_l4r5zi has no bare-metal platform family; use --template zephyr\n"
    )
    assert not (tmp_path / "p").exists()


def test_create_project_is_self_contained(tmp_path, shared_models):
    project = create_project(shared_models / "tflm/hello_world_int8.tflite", "baremetal", "mps2_an386", tmp_path / "p")
    files = {p.relative_to(project.dir).as_posix() for p in project.dir.rglob("*") if p.is_file()}
    for expected in (
        "CMakeLists.txt",
        "arm-none-eabi.cmake",
        "linker.ld",
        "src/main.c",
        "board.toml",
        "inputs/input0.npy",
        "model/metadata.json",
        "crt/platform/cmsdk/platform.c",
        "crt/platform/cmsdk/startup.c",
        "crt/src/report.c",
        "crt/include/microcompiler/platform.h",
    ):
        assert expected in files
    assert not any(p.is_symlink() for p in project.dir.rglob("*"))
    cmake = (project.dir / "CMakeLists.txt").read_text()
    assert "MC_UART_BASE=0x40004000u" in cmake and "MC_TIMER_CMSDK=1" in cmake and "MC_HAS_FPU=1" in cmake
    assert "--specs=nano.specs" in cmake and "-Wl,--gc-sections" in cmake and "-Werror" in cmake
    assert "/work/" not in cmake and str(Path(__file__).parents[1]) not in cmake
    ld = (project.dir / "linker.ld").read_text()
    assert "FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 0x00400000" in ld and "__stack_end" in ld
    # a second project in the same place replaces the first; anything else there is left alone
    create_project(shared_models / "tflm/hello_world_int8.tflite", "baremetal", "mps2_an385", tmp_path / "p")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(Exception, match="is not a microcompiler project"):
        create_project(shared_models / "tflm/hello_world_int8.tflite", "baremetal", "mps2_an385", tmp_path / "other")
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"


# ---- Transports ----


class ScriptedTransport(Transport):
    def __init__(self, chunks: list[bytes]):
        self.chunks = list(chunks)
        self.written = b""

    def write(self, data: bytes) -> None:
        self.written += data

    def read(self, n: int, timeout: float) -> bytes:
        if not self.chunks:
            return b""
        chunk = self.chunks.pop(0)
        self.chunks[:0] = [chunk[n:]] if chunk[n:] else []
        return chunk[:n]

    def pending(self) -> int:
        return len(self.chunks[0]) if self.chunks else 0

    def close(self) -> None:
        pass


def test_read_until_collects_up_to_a_pattern():
    with ScriptedTransport([b"noise\nMC-BEG", b"IN\nticks 3\nMC-END 0 MC_OK\n", b"later"]) as link:
        data = link.read_until(re.compile(rb"^MC-END[^\n]*\n", re.MULTILINE), timeout=1.0)
    assert data.endswith(b"MC-END 0 MC_OK\n") and b"later" not in data


def test_read_until_times_out_with_what_arrived():
    link = ScriptedTransport([b"half a rep"])
    with pytest.raises(
        DeviceError,
        match=r"no answer from the device within 0.2 s; it sent 10 bytes, "
        r"ending with: 'half a rep'",
    ):
        link.read_until(b"MC-END", timeout=0.2)


def test_serial_port_found_by_usb_id(monkeypatch):
    import serial.tools.list_ports

    from microcompiler.transport import serial as serial_transport

    ports = [
        SimpleNamespace(device="/dev/ttyS0", vid=None, pid=None),
        SimpleNamespace(device="/dev/ttyACM3", vid=0x0483, pid=0x374E),
    ]
    monkeypatch.setattr(serial.tools.list_ports, "comports", lambda: ports)
    assert serial_transport.find_port(load_board("nucleo_l4r5zi").usb_ids) == "/dev/ttyACM3"  # ST-LINK/V3E
    with pytest.raises(
        DeviceError,
        match=r"no serial port with USB id 1366:0101.*; is the board plugged in\? "
        r"Serial ports seen: /dev/ttyS0, /dev/ttyACM3 \(0483:374e\)",
    ):
        serial_transport.find_port(probe_usb_ids(["jlink"]))


def test_serial_port_that_does_not_open_is_a_device_error(tmp_path):
    from microcompiler.transport.serial import SerialTransport

    with pytest.raises(DeviceError, match="cannot open serial port"):
        SerialTransport(str(tmp_path / "no-such-tty"))


def test_qemu_missing_is_a_toolchain_error(tmp_path):
    from microcompiler.transport.qemu import QemuTransport

    with pytest.raises(ToolchainError, match="'qemu-system-nothing' is not on PATH; install QEMU"):
        QemuTransport("mps2-an386", tmp_path / "fw.elf", qemu="qemu-system-nothing")


def test_board_is_hashable_and_frozen():
    board = load_board("mps2_an385")
    assert isinstance(board, Board) and hash(board) == hash(load_board("mps2_an385"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        board.name = "other"  # type: ignore[misc]
