"""What a firmware built for a real board must show (test_zephyr_build.py, test_zephyr_hardware_builds.py):
it fits the board's memory, it holds the DSP kernels on a core with the DSP extension (SMLAD in the
disassembly), its FPU build attributes match the board's Cpu, and microcompiler's reports of it agree
with the ELF."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from microcompiler.boards import Board
from microcompiler.targets.toolchain import firmware_size, model_flash

# -mfpu of a board's Cpu -> what arm-none-eabi-readelf -A says of code built for it (Tag_FP_arch),
# and whether that FPU has double precision (no "Tag_ABI_HardFP_use: SP only").
FP_ARCH = {
    "fpv4-sp-d16": ("VFPv4-D16", False),
    "fpv5-sp-d16": ("FPv5/FP-D16 for ARMv8", False),
    "fpv5-d16": ("FPv5/FP-D16 for ARMv8", True),
}


def attributes(elf: Path) -> dict[str, str]:
    text = subprocess.run(
        ["arm-none-eabi-readelf", "-A", str(elf)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return dict(re.findall(r"^\s*(Tag_\w+): (.*?)\s*$", text, re.M))


def registry_bytes(elf: Path, model: str) -> int:
    text = subprocess.run(
        ["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return sum(int(size, 16) for size, name in re.findall(rf"^\w+ (\w+) [rR] ({model}_registry\w*)$", text, re.M))


def smlad_count(elf: Path) -> int:
    text = subprocess.run(
        ["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    return len(re.findall(r"\tsmlad\w*\s", text))


def check_firmware(elf: Path, board: Board, model: str, build_output: str, weights_bytes: int) -> None:
    """``build_output``: what 'microcompiler build' printed; ``weights_bytes``: what create-project
    said the model's weights take."""
    flash, ram = firmware_size(elf)
    assert 0 < flash <= board.flash.size, f"flash {flash} B on a board with {board.flash.size} B"
    assert 0 < ram <= board.ram.size, f"RAM {ram} B on a board with {board.ram.size} B"
    assert f"flash {flash:,} B, RAM {ram:,} B" in build_output, build_output  # the build reports the ELF's sizes
    split = model_flash(elf, model)
    # the model's constant data in the ELF: its weights, and in host-driven firmware its operator
    # registry (the RPC server's table of the operators, <model>_registry*)
    assert split is not None and split["weights_bytes"] - registry_bytes(elf, model) == weights_bytes, (
        split,
        weights_bytes,
    )
    smlads = smlad_count(elf)
    if "dsp" in board.cpu.features:
        assert smlads > 0, f"no SMLAD in {elf}: the DSP kernels are missing on {board.cpu.core}"
    else:
        assert smlads == 0
    tags = attributes(elf)
    if board.cpu.has_fpu:
        fp_arch, double = FP_ARCH[board.cpu.fpu or ""]
        assert tags.get("Tag_FP_arch") == fp_arch, tags
        assert (tags.get("Tag_ABI_HardFP_use") != "SP only") == double, tags
        if board.cpu.float_abi == "hard":
            assert tags.get("Tag_ABI_VFP_args") == "VFP registers", tags
    else:
        assert "Tag_FP_arch" not in tags and "Tag_ABI_VFP_args" not in tags, tags


def created_weights(create_output: str) -> int:
    """The weights create-project reported ("weights 26,672 B")."""
    match = re.search(r"weights ([\d,]+) B", create_output)
    assert match, create_output
    return int(match.group(1).replace(",", ""))
