"""Any Zephyr board target is a --board: described from the workspace by Zephyr's own CMake configure
(microcompiler.zephyr.board_facts, the Kconfig truth), listed fast from board.yml, Kconfig selects
and the devicetree (microcompiler.zephyr.catalog), and turned into a Board (microcompiler.boards).

describe() configures for real (tens of seconds on a busy machine) and caches its result under
~/.cache/microcompiler/zephyr-boards, so the default suite describes one board, nucleo_l4r5zi (the
one tests/test_zephyr_build.py builds, so the two share the configure), and a rerun reads it back;
the other boards are long tests."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from microcompiler import cli
from microcompiler.boards import board_toml, load_board, load_board_file, write_board_file
from microcompiler.errors import BoardError
from microcompiler.zephyr import board_facts, catalog, hardware

ROOT = Path(__file__).resolve().parents[1]
BASE = Path(os.environ["ZEPHYR_BASE"]).resolve() if os.environ.get("ZEPHYR_BASE") else None
needs_workspace = pytest.mark.skipif(
    BASE is None or not (BASE / "VERSION").is_file(), reason="needs the Zephyr workspace (tests/conftest.py)"
)
TINY_CNN = ROOT / "examples/tiny_cnn/tiny_cnn_int8.tflite"

DEFAULT_BOARDS = ["nucleo_l4r5zi"]  # described in the default suite (cached)
LONG_BOARDS = [
    "qemu_cortex_m0",
    "nucleo_f746zg",
    "nucleo_h743zi",
    "b_u585i_iot02a",
    "nrf52840dk/nrf52840",
    "nrf5340dk/nrf5340/cpuapp",
    "mps2/an521/cpu0",
    "actinius_icarus",  # an nRF9160 board whose pinctrl nodes are in its default revision's overlay
]


def _cli(*args: str) -> SimpleNamespace:
    """The command line run in this process (a subprocess would import microcompiler and read the
    workspace's board files again, some seconds each): its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(args))
        except SystemExit as exc:  # argparse's own refusals
            status = exc.code if isinstance(exc.code, int) else 2
    return SimpleNamespace(returncode=status, stdout=out.getvalue(), stderr=err.getvalue())


def _kconfig_features(target: str) -> tuple[str, str, bool, str]:
    """(core, fpu, dsp, mve) from the Kconfig selects alone, as the catalog reads them."""
    bt = next(t for t in hardware.board_targets(BASE) if t.target == target)
    enabled = hardware.enabled_symbols(BASE, bt)
    core = next(c for s, c in board_facts.CORE_SYMBOLS.items() if s in enabled)
    fpu = (
        "none" if "CPU_HAS_FPU" not in enabled else "double" if "CPU_HAS_FPU_DOUBLE_PRECISION" in enabled else "single"
    )
    mve = "float" if "ARMV8_1_M_MVEF" in enabled else "int" if "ARMV8_1_M_MVEI" in enabled else "none"
    return core, fpu, core in board_facts.DSP_CORES or "ARMV8_M_DSP" in enabled, mve


def _agree(target: str) -> None:
    """The listing's features and memory are the configure's (the Kconfig truth)."""
    truth = board_facts.describe(target, BASE)
    entry = catalog.find(catalog.catalog(BASE, target), target)
    assert entry is not None, f"{target} is not in the listing"
    assert (entry.core, entry.fpu, entry.dsp, entry.mve) == (truth.core, truth.fpu, truth.dsp, truth.mve)
    assert (entry.flash_origin, entry.flash_size) == (truth.flash_origin, truth.flash_size)
    assert (entry.ram_origin, entry.ram_size) == (truth.ram_origin, truth.ram_size)
    assert entry.emulated == (truth.qemu_machine is not None) and entry.hal_missing is None


# ---- the default suite: two boards described, the rest from files ----


@needs_workspace
def test_nucleo_l4r5zi_is_described_from_its_kconfig_and_devicetree():
    d = board_facts.describe("nucleo_l4r5zi", BASE)
    config_dts = (BASE / "boards/st/nucleo_l4r5zi/nucleo_l4r5zi.dts").read_text()
    assert (d.core, d.fpu, d.dsp, d.mve) == ("cortex-m4", "single", True, "none")
    assert (d.flash_origin, d.flash_size, d.ram_origin) == (0x08000000, 2048 * 1024, 0x20000000)
    assert d.ram_size == 640 * 1024 and d.qemu_machine is None and d.runner == "stm32cubeprogrammer"
    # the SoC's dtsi chooses &rng as zephyr,entropy; this board's devicetree leaves it disabled
    assert "&rng" not in config_dts and d.entropy is False
    assert d.source.startswith(f"Zephyr {board_facts.version_text(BASE)} at {BASE}")
    board = load_board("nucleo_l4r5zi")
    assert board.cpu.cflags == ["-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mthumb", "-mfloat-abi=hard"]
    assert board.cpu.features == {"dsp", "fpu"} and board.platform is None and board.zephyr_board == "nucleo_l4r5zi"
    assert "0483:374b" in board.usb_ids and board.runner == "stm32cubeprogrammer" and not board.emulated
    assert board.zephyr_facts.fpu and board.zephyr_facts.source == d.source


@needs_workspace
@pytest.mark.long
def test_qemu_cortex_m0_is_emulated_and_has_no_features():
    d = board_facts.describe("qemu_cortex_m0", BASE)
    assert (d.core, d.fpu, d.dsp, d.mve, d.qemu_machine) == ("cortex-m0", "none", False, "none", "microbit")
    board = load_board("qemu_cortex_m0")
    assert (
        board.cpu.features == {"no_long_multiply"} and board.cpu.fpu is None and "-mfloat-abi=soft" in board.cpu.cflags
    )
    assert board.emulated and board.runner is None and not board.usb_ids


@needs_workspace
@pytest.mark.parametrize("target", DEFAULT_BOARDS)
def test_listing_agrees_with_the_configure(target):
    _agree(target)


@needs_workspace
@pytest.mark.parametrize("target", DEFAULT_BOARDS + LONG_BOARDS)
def test_kconfig_selects_give_the_features_of_the_known_boards(target):
    """Cheap: the catalog's Kconfig reading of each board (the long tests hold it to the configure)."""
    core, fpu, dsp, mve = _kconfig_features(target)
    expected = {
        "nucleo_l4r5zi": ("cortex-m4", "single", True),
        "qemu_cortex_m0": ("cortex-m0", "none", False),
        "nucleo_f746zg": ("cortex-m7", "single", True),
        "nucleo_h743zi": ("cortex-m7", "double", True),
        "b_u585i_iot02a": ("cortex-m33", "single", True),
        "nrf52840dk/nrf52840": ("cortex-m4", "single", True),
        "nrf5340dk/nrf5340/cpuapp": ("cortex-m33", "single", True),
        "mps2/an521/cpu0": ("cortex-m33", "none", False),
        "actinius_icarus": ("cortex-m33", "single", True),
    }[target]
    assert (core, fpu, dsp) == expected and mve == "none"


@needs_workspace
def test_the_listing_has_every_cortex_m_board_whose_hal_is_there():
    """Every board.yml target whose Kconfig selects a Cortex-M core is listed, with its memory
    unless its vendor HAL is missing; and a RISC-V board is not."""
    targets = {t.target for t, _, _ in catalog.cortex_m_targets(BASE)}
    assert {"nucleo_l4r5zi", "nrf5340dk/nrf5340/cpuapp", "mps2/an521/cpu0", "qemu_cortex_m0", "frdm_k64f"} <= targets
    assert "esp32c3_devkitm" not in targets and "qemu_x86" not in targets
    assert len(targets) > 400  # Zephyr 3.7.1 has some 500


@needs_workspace
def test_a_board_whose_pinctrl_is_in_its_revision_overlay_is_listed_with_its_memory():
    """actinius_icarus (nRF9160) defines its pinctrl nodes (&uart0_default...) only in the overlay of
    each board revision, which Zephyr's dts.cmake appends for the default revision (board.yml's
    revision: default: 2.0.0); without it the devicetree does not resolve and the memory is unknown.
    The long test_listing_agrees_with_the_configure_long[actinius_icarus] holds the sizes to Kconfig."""
    target = next(t for t in hardware.board_targets(BASE) if t.target == "actinius_icarus")
    assert (
        target.revision == "2.0.0"
        and target.revision_overlay() == target.board_dir / "actinius_icarus_nrf9160_2_0_0.overlay"
    )
    assert '#include "actinius_icarus_common_2_0_0.dtsi"' in target.revision_overlay().read_text()
    assert "uart0_default:" in (target.board_dir / "actinius_icarus_common_2_0_0.dtsi").read_text()
    assert "uart0_default:" not in (target.board_dir / "actinius_icarus_nrf9160.dts").read_text()
    for name in ("actinius_icarus", "actinius_icarus/nrf9160/ns", "nrf9160dk/nrf9160"):
        entry = catalog.find(catalog.catalog(BASE, name.split("/")[0]), name)
        assert entry is not None and entry.note is None, entry
        assert entry.flash_size and entry.ram_size and entry.ram_origin is not None, entry
    nrf52 = next(t for t in hardware.board_targets(BASE) if t.target == "nrf52840dk/nrf52840")
    assert nrf52.revision is None and nrf52.revision_overlay() is None


@needs_workspace
def test_cli_lists_zephyr_boards_with_a_filter():
    proc = _cli("boards", "--zephyr", "nucleo_l4r5")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["TARGET", "CPU", "FPU", "DSP", "MVE", "FLASH", "RAM", "KIND"]
    assert lines[1].split() == [
        "nucleo_l4r5zi",
        "cortex-m4",
        "single",
        "yes",
        "-",
        "2",
        "MiB",
        "640",
        "KiB",
        "hardware",
    ]
    proc = _cli("boards", "--zephyr", "no_such_board_anywhere")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no Cortex-M board target" in proc.stderr


@needs_workspace
@pytest.mark.parametrize(
    "board,isa",
    [
        ("nucleo_l4r5zi", "dsp"),
        pytest.param("qemu_cortex_m0", "c", marks=pytest.mark.long),  # a describe() of its own
        pytest.param("b_u585i_iot02a", "dsp", marks=pytest.mark.long),  # an M33 with the DSP extension
    ],
)
def test_analyze_picks_the_kernels_of_the_board(board, isa):
    proc = _cli("analyze", str(TINY_CNN), "--board", board)
    assert proc.returncode == 0, proc.stderr
    kernels = re.findall(r"\s(\S+)/(c|dsp|mve)\s", proc.stdout)
    assert kernels and {k[1] for k in kernels} == {isa}


@needs_workspace
def test_a_zephyr_board_keeps_its_description_in_a_board_file(tmp_path):
    board = load_board("nucleo_l4r5zi")
    write_board_file(board, tmp_path / "board.toml")
    again = load_board_file(tmp_path / "board.toml")
    assert again == board.__class__(**{**board.__dict__, "source": tmp_path / "board.toml"})
    assert board_toml(again).splitlines()[0] == 'name = "nucleo_l4r5zi"'


@needs_workspace
def test_unknown_board_is_one_line_without_a_configure():
    proc = _cli("analyze", str(TINY_CNN), "--board", "no_such_board")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("microcompiler: error: unknown board 'no_such_board'; known boards: host, ")
    assert f"Zephyr {board_facts.version_text(BASE)} at {BASE} has no board 'no_such_board'" in proc.stderr


@needs_workspace
def test_bare_metal_template_on_a_zephyr_board_is_refused(tmp_path):
    proc = _cli("create-project", str(TINY_CNN), "--board", "nucleo_l4r5zi", "-o", str(tmp_path / "p"))
    assert proc.returncode == 2
    assert (
        proc.stderr
        == "microcompiler: error: board nucleo_l4r5zi has no bare-metal platform family; use --template zephyr\n"
    )


def _fake_tree(tmp_path: Path) -> Path:
    base = tmp_path / "ws" / "zephyr"
    (base / "cmake").mkdir(parents=True)
    (base / "VERSION").write_text("VERSION_MAJOR = 3\nVERSION_MINOR = 7\nPATCHLEVEL = 1\n")
    (base / "boards/acme/gizmo").mkdir(parents=True)
    (base / "boards/acme/gizmo/board.yml").write_text("board:\n  name: gizmo\n  socs:\n  - name: g1\n")
    return base


def _description(target: str, base: Path) -> board_facts.ZephyrBoardDescription:
    return board_facts.ZephyrBoardDescription(
        target, f"{target}/g1", "g1", "cortex-m33", "single", True, "none", 0, 1 << 20, 0x20000000, 1 << 18,
        64_000_000, True, None, "jlink", ("jlink",), "3.7.1", f"fake configure of {target} in {base}",
    )  # fmt: skip


def test_a_damaged_cache_entry_is_rebuilt_not_trusted(tmp_path, monkeypatch):
    base = _fake_tree(tmp_path)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    calls = []
    monkeypatch.setattr(board_facts, "configure", lambda t, b, e=None: calls.append(t) or _description(t, b))
    first = board_facts.describe("gizmo", base, env)
    assert calls == ["gizmo"] and board_facts.describe("gizmo", base, env) == first and calls == ["gizmo"]
    path = board_facts.cache_file("gizmo", base, env)
    assert json.loads(path.read_text())["core"] == "cortex-m33"
    for damage in ("{not json", json.dumps({**first.to_json(), "core": "cortex-a53"}), json.dumps({"target": "gizmo"})):
        path.write_text(damage)
        assert board_facts.describe("gizmo", base, env) == first
        assert json.loads(path.read_text()) == first.to_json()
    assert calls == ["gizmo"] * 4
    with pytest.raises(board_facts.UnknownZephyrBoardError, match=r"has no board 'gadget'; `microcompiler boards"):
        board_facts.describe("gadget", base, env)  # no such board.yml: refused before any configure
    assert len(calls) == 4


def test_a_configured_non_arm_board_is_one_line(tmp_path):
    base = _fake_tree(tmp_path)
    build = tmp_path / "build"
    (build / "zephyr").mkdir(parents=True)
    (build / "zephyr/.config").write_text('CONFIG_RISCV=y\nCONFIG_SOC="esp32c3"\n')
    with pytest.raises(BoardError, match=r"^board esp32c3_devkitm is riscv \(CONFIG_RISCV\), not a Cortex-M: .*$"):
        board_facts.read_build("esp32c3_devkitm", base, build, 1, "")


def test_a_target_another_zephyr_release_names_is_one_line_with_the_valid_ones(tmp_path):
    """mps3/corstone300/an547 is Zephyr 4.0's name; 3.7's configure stops in boards.cmake and lists
    the board's targets (this is its message), which the error passes on."""
    base = _fake_tree(tmp_path)
    log = (
        "CMake Error at /ws/zephyr/cmake/modules/boards.cmake:320 (message):\n"
        "  Board qualifiers `/corstone300/an547` for board `mps3` not found.  Please\n"
        "  specify a valid board target.\n\n  Valid board targets for mps3 are:\n\n  mps3/an547\n\n"
        "  mps3/an547/ns\n\nCall Stack (most recent call first):\n  CMakeLists.txt:2 (find_package)\n"
        "-- Configuring incomplete, errors occurred!\n"
    )
    with pytest.raises(board_facts.UnknownZephyrBoardError) as info:
        board_facts.read_build("mps3/corstone300/an547", base, tmp_path / "build", 1, log)
    assert str(info.value) == (
        f"Zephyr 3.7.1 at {base} has no board target 'mps3/corstone300/an547': its targets of board mps3 "
        "are mps3/an547, mps3/an547/ns"
    )


def test_features_follow_the_kernels_use_of_them():
    """DSP kernels on an M33 with the DSP extension, none on an M0; an M55's Helium and FPU flags."""
    from microcompiler.boards import board_from_description

    d = _description("gizmo", Path("/ws"))
    m33 = board_from_description(d)
    assert m33.cpu.features == {"dsp", "fpu"} and m33.cpu.fpu == "fpv5-sp-d16" and m33.cpu.mcpu == "cortex-m33"
    nodsp = board_from_description(d.__class__(**{**d.__dict__, "dsp": False, "fpu": "none"}))
    assert nodsp.cpu.features == frozenset() and nodsp.cpu.mcpu == "cortex-m33+nodsp+nofp"
    m55 = board_from_description(d.__class__(**{**d.__dict__, "core": "cortex-m55", "mve": "float"}))
    assert m55.cpu.features == {"dsp", "fpu", "mve"} and m55.cpu.fpu == "auto"
    assert "1366:0101" in m33.usb_ids and m33.runner == "jlink"


# ---- long: the other boards, each one configure ----


@needs_workspace
@pytest.mark.long
@pytest.mark.parametrize("target", LONG_BOARDS)
def test_listing_agrees_with_the_configure_long(target):
    _agree(target)


@needs_workspace
@pytest.mark.long
@pytest.mark.parametrize(
    "target,message",
    [
        ("esp32c3_devkitm", r"^board esp32c3_devkitm is riscv \(CONFIG_RISCV\), not a Cortex-M"),
        ("frdm_k64f", r"^board frdm_k64f needs Zephyr's hal_nxp module, which the workspace at .* does not have: west update hal_nxp$"),
    ],
)  # fmt: skip
def test_boards_that_cannot_be_described_are_one_line(target, message, tmp_path):
    with pytest.raises(BoardError, match=message):
        board_facts.describe(target, BASE, {**os.environ, "XDG_CACHE_HOME": str(tmp_path)})


@needs_workspace
@pytest.mark.long
def test_the_describe_configure_with_the_minimal_libc_reads_the_same_facts(monkeypatch):
    """describe() configures with Zephyr's minimal C library (board_facts.FAST_LIBC: the picolibc
    module's CMake is most of a configure); the facts are those of a configure with the default one."""
    fast = board_facts.configure("nucleo_l4r5zi", BASE)
    monkeypatch.setattr(board_facts, "FAST_LIBC", "-DMICROCOMPILER_UNUSED=1")  # Zephyr's default C library
    full = board_facts.configure("nucleo_l4r5zi", BASE)
    assert fast == full and fast.core == "cortex-m4" and fast.runner == "stm32cubeprogrammer"
