"""Zephyr projects: project_templates/zephyr, crt/platform/zephyr and microcompiler/targets/zephyr.py.

Zephyr cannot be installed everywhere these tests run, so they check what Zephyr needs without it
(files, board targets, every Kconfig symbol against tests/data/zephyr_kconfig_symbols.txt, the
CMake version logic, the one-line errors) and run the real thing only when ZEPHYR_BASE, west and
QEMU are there: a shared model built with west and run in QEMU in both modes, against the host.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from microcompiler.boards import board_names, load_board
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.compiler import compile_model
from microcompiler.errors import BoardError, DeviceError
from microcompiler.inputs import random_inputs
from microcompiler.project import Project, create_project
from microcompiler.targets import zephyr
from microcompiler.zephyr import workspace

ROOT = Path(__file__).resolve().parents[1]
SYMBOLS = ROOT / "tests" / "data" / "zephyr_kconfig_symbols.txt"
WEST_HINT = "install west: pip install west, and set up a workspace: see docs/zephyr.md"
CONFIG_LINE = re.compile(r"^CONFIG_([A-Z0-9_]+)=(.*)$")


def verified_symbols() -> set[str]:
    symbols = set()
    for line in SYMBOLS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            symbols.add(line.split()[0])
    return symbols


def kconfig_assignments(path: Path) -> dict[str, str]:
    assignments = {}
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = CONFIG_LINE.match(line)
        assert match, f"{path.name}: not a Kconfig assignment: {line!r}"
        assert match.group(1) not in assignments, f"{path.name} sets CONFIG_{match.group(1)} twice"
        assignments[match.group(1)] = match.group(2)
    return assignments


@pytest.fixture(scope="module")
def hello(shared_models):
    return compile_model(shared_models / "tflm" / "hello_world_int8.tflite")


# ---- Every board gets what Zephyr needs ----


@pytest.mark.parametrize("mode", ["standalone", "host-driven"])
@pytest.mark.parametrize("board_name", board_names())
def test_every_board_gets_a_complete_zephyr_project(board_name, mode, hello, tmp_path):
    board = load_board(board_name)
    if board.zephyr_board is None:
        with pytest.raises(zephyr.ZephyrBoardError, match="has no Zephyr board name"):
            create_project(hello, "zephyr", board, tmp_path / "p", mode=mode)
        return
    project = create_project(hello, "zephyr", board, tmp_path / "p", mode=mode)
    d = project.dir
    info = json.loads((d / "microcompiler-project.json").read_text())
    assert info["template"] == "zephyr" and info["mode"] == mode
    assert info["zephyr_board"] == board.zephyr_board
    assert Project.load(d).elf == d / "build" / "zephyr" / "zephyr.elf"

    cmake = (d / "CMakeLists.txt").read_text()
    assert "find_package(Zephyr REQUIRED HINTS $ENV{ZEPHYR_BASE})" in cmake
    assert board.zephyr_board in cmake
    listed = re.findall(r"^\s+((?:model|crt|src)/\S+\.c)$", cmake, re.M)
    assert "src/main.c" in listed and "crt/platform/zephyr/platform.c" in listed
    assert any(s.startswith("model/src/") for s in listed) and "crt/src/report.c" in listed
    for source in listed:
        assert (d / source).is_file(), f"CMakeLists.txt lists {source}, which is missing"
    assert (d / "crt" / "platform" / "zephyr" / "zephyr_platform.h").is_file()
    assert not (d / "crt" / "platform" / "cmsdk").exists()  # one platform: Zephyr's

    stem = board.zephyr_board.replace("/", "_")
    fragment = d / "boards" / f"{stem}.conf"
    assert fragment.is_file(), "Zephyr merges boards/<board target with / as _>.conf"
    prj, board_conf = kconfig_assignments(d / "prj.conf"), kconfig_assignments(fragment)
    legacy = kconfig_assignments(d / "legacy_zephyr.conf")
    assert not set(prj) & set(board_conf), "prj.conf and the board fragment must not disagree"
    unverified = (set(prj) | set(board_conf) | set(legacy)) - verified_symbols()
    assert not unverified, f"Kconfig symbols not checked against Zephyr: {sorted(unverified)}"
    for conf in (d / "boards").glob("*.conf"):
        assert set(kconfig_assignments(conf)) <= verified_symbols()

    assert prj["UART_INTERRUPT_DRIVEN"] == "y" and prj["REQUIRES_FULL_LIBC"] == "y"
    assert int(prj["MAIN_STACK_SIZE"]) >= 2048
    assert (board_conf.get("TIMING_FUNCTIONS") == "y") == (not board.emulated)  # QEMU has no DWT
    facts = zephyr.board_facts(board)
    assert (board_conf.get("FPU") == "y") == facts.fpu

    main = (d / "src" / "main.c").read_text()
    assert f'#include "{hello.metadata["name"]}.h"' in main and "mc_platform_init()" in main
    if mode == "host-driven":
        assert "mc_rpc_server_serve" in main and (d / "host_driven.json").is_file()
    else:
        # the one runner of crt/include/microcompiler/runner.h reports; main() hands it the model's run
        assert "mc_runner_run" in main and "hello_world_int8_run(" in main
        assert np.load(d / "inputs" / "input0.npy").dtype == np.int8


def test_graph_executor_project_uses_the_graph_executor(hello, tmp_path):
    project = create_project(hello, "zephyr", "mps2_an385", tmp_path / "p", executor="graph")
    main = (project.dir / "src" / "main.c").read_text()
    assert "mc_graph_run(&g_graph)" in main and "HELLO_WORLD_INT8_GRAPH_POOL_BYTES" in main


def test_standalone_firmware_runs_a_sequence_and_reports_each_round_whole(hello, tmp_path):
    """Zephyr's standalone firmware runs a sequence of input sets as bare metal does (the one model
    template, project_templates/models/runners.c.j2), then resets the state and reports the whole
    sequence again every second: the host reads one round whole, even after a torn one."""
    from microcompiler.targets.base import decode_report, get_target

    target = get_target("zephyr")
    steps = [[np.array([[k]], dtype=np.int8)] for k in (5, -7, 9)]
    project = target.create(hello, load_board("mps2_an385"), tmp_path / "p", input_steps=steps)
    main = (project.dir / "src" / "main.c").read_text()
    assert project.steps == 3 and "#define MODEL_STEPS 3u" in main and "g_hello_world_int8_input0 + step * 1u" in main
    assert "mc_runner_run_all(g_models, MODEL_COUNT, MODEL_STEPS, " in main and "mc_runner_reset_all(" in main

    def report(value: int) -> str:
        return f"MC-BEGIN\r\noutput0 {value & 0xFF:02x}\r\nticks {100 + value}\r\nhz 1000\r\nMC-END 0\r\n"

    rounds = [report(1) + report(2) + report(3) + "MC-STEPS-END\r\n"] * 2
    torn = rounds[0][rounds[0].index("hz 1000") :]  # a late reader: the tail of the first step, then two whole steps
    text = torn + rounds[1]
    pattern = target.report_pattern(3)
    assert pattern.search(torn.encode()) is None and pattern.search(text.encode()).group(0).decode() == rounds[1]
    result = decode_report(target.report_text(text, 3), hello.info)
    assert [int(step[0].ravel()[0]) for step in result.step_outputs] == [1, 2, 3]
    assert result.step_ticks == [101, 102, 103]
    assert target.report_text(report(4) + report(5), 1) == report(4)  # one input set: one whole report


def test_boards_zephyr_knows_are_the_boards_in_boards_dir():
    targets = {load_board(name).zephyr_board for name in board_names()} - {None}
    assert targets <= set(zephyr.KNOWN_BOARDS), "add the board's Zephyr facts (checked in Zephyr's source)"


def test_renamed_board_gets_its_fragment_under_the_old_name_too(hello, tmp_path):
    project = create_project(hello, "zephyr", "mps3_an547", tmp_path / "p")
    old = project.dir / "boards" / "mps3_an547.conf"  # Zephyr 3.7 calls it mps3/an547
    assert old.read_text() == (project.dir / "boards" / "mps3_corstone300_an547.conf").read_text()


def test_stack_is_sized_from_the_model(hello):
    """A whole compiled model's metadata (main_stack_bytes reads it through ModelInfo): more stack for
    float outputs (libm, the FP context), more again host-driven (the RPC server)."""
    import copy

    meta = copy.deepcopy(hello.metadata)
    small = zephyr.main_stack_bytes(ModelInfo.from_json(meta), "standalone")
    for output in meta["outputs"]:
        output["dtype"] = "float32"
    floats = ModelInfo.from_json(meta)
    assert small % 256 == 0 and small < zephyr.main_stack_bytes(floats, "standalone")
    assert zephyr.main_stack_bytes(floats, "standalone") < zephyr.main_stack_bytes(floats, "host-driven")


# ---- The CMake logic that picks legacy_zephyr.conf ----


def _cmake_version_block(cmake_text: str) -> str:
    start = cmake_text.index("if(DEFINED ENV{ZEPHYR_BASE}")
    end = cmake_text.index("find_package(Zephyr")
    return cmake_text[start:end]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
@pytest.mark.parametrize("version,legacy", [((3, 7), True), ((4, 0), True), ((4, 1), False), ((4, 3), False)])
def test_cmake_adds_the_ring_buffer_fragment_only_before_zephyr_4_1(version, legacy, hello, tmp_path):
    project = create_project(hello, "zephyr", "mps2_an385", tmp_path / "p")
    base = tmp_path / "zephyr"
    base.mkdir()
    (base / "VERSION").write_text(
        f"VERSION_MAJOR = {version[0]}\nVERSION_MINOR = {version[1]}\n"
        "PATCHLEVEL = 0\nVERSION_TWEAK = 0\nEXTRAVERSION =\n"
    )
    script = tmp_path / "check.cmake"
    script.write_text(
        f"set(CMAKE_CURRENT_LIST_DIR {project.dir})\n"
        + _cmake_version_block((project.dir / "CMakeLists.txt").read_text())
        + 'message(STATUS "EXTRA_CONF_FILE=${EXTRA_CONF_FILE}")\n'
    )
    proc = subprocess.run(
        ["cmake", "-P", str(script)], capture_output=True, text=True, env={**os.environ, "ZEPHYR_BASE": str(base)}
    )
    assert proc.returncode == 0, proc.stderr
    assert ("legacy_zephyr.conf" in proc.stdout + proc.stderr) == legacy


# ---- Board targets against a Zephyr tree ----


def _tree(tmp_path: Path, version: tuple[int, int], boards: dict[str, str]) -> Path:
    """A directory laid out like a Zephyr tree's VERSION and boards/**/board.yml (not a Zephyr)."""
    base = tmp_path / f"tree-{version[0]}.{version[1]}"
    for rel, text in {"VERSION": f"VERSION_MAJOR = {version[0]}\nVERSION_MINOR = {version[1]}\n", **boards}.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    return base


MPS3_YML = "board:\n  name: mps3\n  socs:\n  - name: 'corstone300'\n    variants:\n    - name: 'an547'\n"


def test_west_board_target_follows_the_zephyr_version(tmp_path):
    board = load_board("mps3_an547")
    new = _tree(tmp_path, (4, 2), {"boards/arm/mps3/board.yml": MPS3_YML})
    old = _tree(tmp_path, (3, 7), {"boards/arm/mps3/board.yml": "board:\n  name: mps3\n  socs:\n  - name: an547\n"})
    assert zephyr.west_board_target(board, new) == "mps3/corstone300/an547"
    assert zephyr.west_board_target(board, old) == "mps3/an547"  # renamed in Zephyr 4.0


def test_a_tree_without_the_board_or_too_old_is_refused(tmp_path):
    with pytest.raises(zephyr.ZephyrBoardError, match="has no board 'nucleo_l4r5zi'"):
        zephyr.west_board_target(
            load_board("nucleo_l4r5zi"), _tree(tmp_path, (4, 1), {"boards/arm/mps3/board.yml": MPS3_YML})
        )
    with pytest.raises(workspace.ZephyrBaseError, match="too old"):
        zephyr.west_board_target(load_board("mps2_an385"), _tree(tmp_path, (3, 6), {}))


# ---- Errors, one line each, from the command line ----


def _cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )


def _environment_without_zephyr() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("ZEPHYR_BASE", "PATH")}


def _assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("microcompiler: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def zephyr_project(hello, tmp_path):
    return create_project(hello, "zephyr", "mps2_an385", tmp_path / "project").dir


def test_missing_west_is_one_line_with_the_fix(zephyr_project, shared_models, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {**_environment_without_zephyr(), "PATH": str(empty), "ZEPHYR_BASE": str(tmp_path)}
    _assert_one_line_error(_cli(["build", str(zephyr_project)], env), WEST_HINT)
    model = str(shared_models / "tflm" / "hello_world_int8.tflite")
    for mode in ("standalone", "host-driven"):
        _assert_one_line_error(
            _cli(["run", model, "--template", "zephyr", "--board", "mps2_an385", "--mode", mode], env), WEST_HINT
        )
    _assert_one_line_error(_cli(["flash", str(zephyr_project)], env), "does not exist")  # not built yet


def test_missing_zephyr_base_is_one_line_with_the_fix(zephyr_project, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_west = bin_dir / "west"  # found on PATH; never reached
    fake_west.write_text("#!/bin/sh\necho 'this west must not run' >&2\nexit 99\n")
    fake_west.chmod(0o755)
    info_path = zephyr_project / "microcompiler-project.json"  # a project made where there was no workspace
    info = json.loads(info_path.read_text())
    info.pop("zephyr_base", None)
    info_path.write_text(json.dumps(info))
    env = {**_environment_without_zephyr(), "PATH": str(bin_dir), "MICROCOMPILER_CONFIG_DIR": str(tmp_path / "cfg")}
    _assert_one_line_error(_cli(["build", str(zephyr_project)], env), "ZEPHYR_BASE is not set", "docs/zephyr.md")
    not_a_tree = tmp_path / "not-zephyr"
    not_a_tree.mkdir()
    _assert_one_line_error(
        _cli(["build", str(zephyr_project)], {**env, "ZEPHYR_BASE": str(not_a_tree)}), "is not a Zephyr tree"
    )


def test_board_without_zephyr_name_is_one_line_with_the_fix(shared_models, tmp_path):
    toml = (ROOT / "boards" / "mps2_an385.toml").read_text()
    toml = re.sub(r"\[zephyr\][^\[]*", "", toml).replace('name = "mps2_an385"', 'name = "no_zephyr"')
    board_file = tmp_path / "no_zephyr.toml"
    board_file.write_text(toml)
    model = str(shared_models / "tflm" / "hello_world_int8.tflite")
    env = dict(os.environ)
    _assert_one_line_error(
        _cli(
            ["create-project", model, "--template", "zephyr", "--board", str(board_file), "-o", str(tmp_path / "p")],
            env,
        ),
        "has no Zephyr board name",
        "--template baremetal",
    )
    _assert_one_line_error(
        _cli(["run", model, "--template", "zephyr", "--board", str(board_file)], env), "has no Zephyr board name"
    )
    assert not (tmp_path / "p").exists()


# ---- The real thing, where Zephyr is installed ----


def _missing_for_zephyr_runs() -> str:
    missing = []
    if shutil.which("west") is None:
        missing.append("west (pip install west)")
    if not os.environ.get("ZEPHYR_BASE"):
        missing.append("ZEPHYR_BASE (a Zephyr workspace)")
    if shutil.which("qemu-system-arm") is None:
        missing.append("qemu-system-arm")
    return ", ".join(missing)


# The default suite builds two firmwares (the default board standalone, the M55 host-driven: both
# modes, the DSP and the Helium kernels); every other board and mode is a long test (suite time, 15 min).
QEMU_CASES = [
    ("mps2_an386", "standalone"),
    ("mps3_an547", "host-driven"),
    pytest.param("mps2_an385", "standalone", marks=pytest.mark.long),
    pytest.param("mps2_an385", "host-driven", marks=pytest.mark.long),
    pytest.param("mps2_an500", "host-driven", marks=pytest.mark.long),
    pytest.param("mps2_an386", "host-driven", marks=pytest.mark.long),
    pytest.param("mps2_an500", "standalone", marks=pytest.mark.long),
    pytest.param("mps3_an547", "standalone", marks=pytest.mark.long),
]


@pytest.mark.skipif(bool(_missing_for_zephyr_runs()), reason=f"needs {_missing_for_zephyr_runs()}; see docs/zephyr.md")
@pytest.mark.parametrize("board_name,mode", QEMU_CASES)
def test_zephyr_firmware_in_qemu_matches_the_host(board_name, mode, hello, tmp_path):
    """Built with west on the workspace's Zephyr (3.7.1 here: mps2_an386 and mps2_an500 with the
    project's own board definition) and run in QEMU's matching machine, both modes."""
    from microcompiler.host import HostProgram

    inputs = random_inputs(hello.info.inputs)
    expected = HostProgram(hello, tmp_path / "host").run([inputs])[0].outputs
    _, built, result = zephyr.run_on_board(
        hello, board_name, tmp_path / "zephyr", mode=mode, input=inputs, log=lambda _: None, timeout=600
    )
    assert built.flash_bytes > 0
    for got, want in zip(result.outputs, expected):
        np.testing.assert_array_equal(got, want)
    assert result.hz > 0 and result.ticks > 0
    elf = tmp_path / "zephyr" / "build" / "zephyr" / "zephyr.elf"
    if mode == "host-driven" and board_name in RACE_CHECK_BOARDS:
        _assert_answers_a_hello_sent_while_it_boots(elf, load_board(board_name), tmp_path)
    elif mode == "standalone":  # standalone firmware has no RPC server: its silence is reported as such
        _assert_silence_in_qemu_is_not_blamed_on_the_port(elf, load_board(board_name).qemu_machine)


# The MPS2 boards, where QEMU's monitor reads the UART's registers at the board file's address (on
# the AN547, whose Zephyr image runs Secure, it reads 0 there and at the Secure alias); the AN547 is
# covered by tests/test_zephyr_start.py's 50 starts.
RACE_CHECK_BOARDS = {"mps2_an385", "mps2_an386", "mps2_an500"}
CMSDK_UART_RX_FULL = 0x2  # bit 1 of the CMSDK APB UART's STATE register


def _assert_answers_a_hello_sent_while_it_boots(elf: Path, board, tmp_path: Path) -> None:
    """The host-driven start-up race, made certain: QEMU's gdb stub holds the guest at
    mc_platform_init (Zephyr's UART driver has turned the receiver on, main() has not enabled the
    receive interrupt yet) while the host's HELLO arrives. The CMSDK UART takes its first byte and
    raises no interrupt for it, and takes no other byte until that one is read: firmware that only
    waits for the interrupt never answers (checked on the firmware before the fix); this firmware
    reads what the UART holds when it enables the interrupt (crt/platform/zephyr/platform.c)."""
    from gdb_stop import GdbStub, function_address

    from microcompiler.rpc import protocol as P
    from microcompiler.rpc.client import Session
    from microcompiler.rpc.framing import encode_frame
    from microcompiler.transport.qemu import QemuTransport

    init = function_address(elf, "mc_platform_init")
    gdb_socket = tmp_path / "gdb.sock"
    transport = QemuTransport(board.qemu_machine, elf, extra_args=("-gdb", f"unix:{gdb_socket},server=on,wait=off"))
    try:
        gdb = GdbStub(gdb_socket)  # the guest stops
        try:
            assert gdb.request(f"Z0,{init:x},2") == "OK"  # a breakpoint at mc_platform_init (Thumb)
            transport.qmp("system_reset")
            while transport.read(4096, 0.2):  # what the first boot printed
                pass
            assert gdb.request("c").startswith("T05")  # stopped at the breakpoint
            transport.write(encode_frame(P.request(P.HELLO, 1, 1, P.HELLO_BODY.pack(P.VERSION, 1))))
            time.sleep(0.5)  # QEMU hands the UART the first byte
            # the UART's STATE register says "RX buffer full": the byte is held, no interrupt raised
            state = transport.qmp("human-monitor-command", **{"command-line": f"xp /1wx {board.uart.base + 4:#x}"})
            assert int(state.split(":")[1].split()[0], 16) & CMSDK_UART_RX_FULL, state
            assert gdb.request(f"z0,{init:x},2") == "OK"
            assert gdb.request("D") == "OK"  # detach: the guest runs on
        finally:
            gdb.close()
        with Session(transport, timeout=20, owns_transport=False) as session:
            assert session.device.function_count > 0
    finally:
        transport.close()


def _assert_silence_in_qemu_is_not_blamed_on_the_port(elf: Path, machine: str) -> None:
    from microcompiler.rpc.client import Session
    from microcompiler.transport.qemu import QemuTransport

    with pytest.raises(DeviceError) as caught:
        Session(QemuTransport(machine, elf), timeout=2)  # standalone firmware: no RPC server
    message = str(caught.value)
    assert "did not answer HELLO" in message and "port" not in message
    assert f"QEMU ({machine}) runs zephyr.elf" in message and "host-driven" in message


def test_weights_go_where_zephyr_links_them(tmp_path):
    """Zephyr links weights into zephyr,flash (AN547: the 512 KiB ITCM), not the bare-metal SRAM region."""
    from model_builder import ModelBuilder, fully_connected_options

    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.activation("x", [1, 1024], "int8", scale=0.05, zero_point=0)
    w = b.constant("w", rng.integers(-127, 127, size=(600, 1024), dtype=np.int8), scale=0.01, zero_point=0)
    bias = b.constant("b", np.zeros(600, dtype=np.int32), scale=0.0005, zero_point=0)
    y = b.activation("y", [1, 600], "int8", scale=0.1, zero_point=0)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], fully_connected_options())
    model = tmp_path / "big_fc.tflite"
    model.write_bytes(b.finish(inputs=[x], outputs=[y]))
    with pytest.raises(BoardError, match=r"flash for weights .* \(ITCM\)"):
        create_project(model, "zephyr", "mps3_an547", tmp_path / "p")
    create_project(model, "zephyr", "mps2_an385", tmp_path / "q")  # 4 MiB of flash


def test_board_facts_come_from_the_board_file(tmp_path):
    toml = (ROOT / "boards" / "mps2_an386.toml").read_text()
    assert load_board("mps2_an386").zephyr_facts == zephyr.KNOWN_BOARDS["mps2/an386"]
    assert zephyr.board_facts(load_board("mps2_an386")).fpu
    changed = tmp_path / "an386_soft.toml"
    changed.write_text(toml.replace("fpu = true ", "fpu = false").replace('name = "mps2_an386"', 'name = "an386_soft"'))
    assert zephyr.board_facts(load_board(str(changed))).fpu is False
    head, zephyr_table = toml.split("[zephyr]")
    unchecked = tmp_path / "unchecked.toml"
    unchecked.write_text(head + "[zephyr]" + re.sub(r"^(fpu|entropy|source) = .*\n", "", zephyr_table, flags=re.M))
    facts = zephyr.board_facts(load_board(str(unchecked)))
    assert facts.fpu and not facts.entropy and "not a board microcompiler has checked" in facts.source
    partial = tmp_path / "partial.toml"
    partial.write_text(head + "[zephyr]" + re.sub(r"^source = .*\n", "", zephyr_table, flags=re.M))
    with pytest.raises(BoardError, match="'source' must be a str"):
        load_board(str(partial))


# ---- Every west call is bounded ----

HANGING_WEST = """#!/bin/sh
# A west that hangs: it starts a child that would outlive it, records the child's pid, and waits.
sleep 600 &
echo $! > "{pid_file}"
echo "west $1: working"
wait
"""


def _hanging_west(tmp_path: Path) -> tuple[dict, Path]:
    bin_dir, pid_file = tmp_path / "hanging-bin", tmp_path / "west-child.pid"
    bin_dir.mkdir()
    west = bin_dir / "west"
    west.write_text(HANGING_WEST.format(pid_file=pid_file))
    west.chmod(0o755)
    tree = _tree(
        tmp_path,
        (4, 1),
        {
            "boards/arm/mps2/board.yml": "board:\n  name: mps2\n",
            "boards/st/nucleo_l4r5zi/board.yml": "board:\n  name: nucleo_l4r5zi\n",
        },
    )
    env = {
        **_environment_without_zephyr(),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "ZEPHYR_BASE": str(tree),
        "MICROCOMPILER_WEST_TIMEOUT": "2",
    }
    return env, pid_file


def _assert_stopped(pid_file: Path) -> None:
    pid = int(pid_file.read_text())
    for _ in range(50):  # the group was killed; give the kernel a moment to reap it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{pid}/stat").is_file() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return  # a zombie: dead, waiting for its (init) parent
        time.sleep(0.1)
    raise AssertionError(f"west's child {pid} still runs")


def test_west_build_that_hangs_is_stopped_after_the_timeout(zephyr_project, tmp_path):
    env, pid_file = _hanging_west(tmp_path)
    proc = _cli(["build", str(zephyr_project)], env)
    _assert_one_line_error(
        proc,
        "west build did not finish within 2 s",
        "stopped it and everything it started",
        "MICROCOMPILER_WEST_TIMEOUT",
    )
    _assert_stopped(pid_file)


def test_west_flash_that_hangs_is_stopped_after_the_timeout(hello, tmp_path):
    project = create_project(hello, "zephyr", "nucleo_l4r5zi", tmp_path / "p")  # described from Zephyr
    project.elf.parent.mkdir(parents=True)
    project.elf.write_bytes(b"\x7fELF")  # 'built': flash goes on to west flash
    env, pid_file = _hanging_west(tmp_path)
    proc = _cli(["flash", str(project.dir)], env)
    _assert_one_line_error(proc, "west flash did not finish within 2 s", "MICROCOMPILER_WEST_TIMEOUT")
    _assert_stopped(pid_file)


def test_a_timeout_that_is_not_a_number_is_one_line(zephyr_project, tmp_path):
    env, _ = _hanging_west(tmp_path)
    proc = _cli(["build", str(zephyr_project)], {**env, "MICROCOMPILER_WEST_TIMEOUT": "soon"})
    _assert_one_line_error(proc, "MICROCOMPILER_WEST_TIMEOUT='soon' is not a number of seconds")
