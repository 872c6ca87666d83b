"""Building firmware, the job the targets share: finding the tools, running them under a time limit
with their progress logged (``run_logged``), reading the flash and RAM a firmware uses from its ELF
(``firmware_size``) and the result of a build (``BuildResult``). The targets (baremetal.py,
zephyr.py) say which tools to run; targets/base.py is the project core around them.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from microcompiler import cleanup
from microcompiler.boards import Board
from microcompiler.errors import BoardError, MicrocompilerError, ToolchainError
from microcompiler.outdir import check_path_is_safe
from microcompiler.targets.files import BUILD_DIR

Log = Callable[[str], None]  # where a target's progress lines go (print, a progress bar, nowhere)


@dataclass
class BuildResult:
    elf: Path
    flash_bytes: int  # text + rodata + the initial values of data
    ram_bytes: int  # data + bss + the stack region


def require_tool(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolchainError(f"'{tool}' is not on PATH; {hint}")
    return path


_OVERFLOW = re.compile(r"region [`']?(\w+)'? overflowed by (\d+) bytes")


def tool_timeout(variable: str, default: float) -> float:
    """Seconds a build or flash tool may take: ``$variable`` if set (a positive number), else default."""
    text = os.environ.get(variable)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise MicrocompilerError(
            f"{variable}={text!r} is not a number of seconds; give a positive number (default {default:g})"
        )
    return value


BUILD_LOG = "microcompiler-build.log"  # in the project's build folder: the last build's whole output
_EXCERPT_LINE_CHARS = 300  # a line of the excerpt longer than this (a compile command) is cut


def run_logged(
    cmd: list[str],
    log: Log,
    what: str,
    timeout: float,
    hint: str = "",
    env: dict[str, str] | None = None,
    log_file: Path | None = None,
    append: bool = False,
) -> None:
    """Run a build tool for at most ``timeout`` seconds; its progress lines go to log. Its whole
    output is saved in ``log_file`` (after the previous step's when ``append``). A failure is an
    error whose message names what failed and the saved log, with the first error of the output
    and a few lines around it as its ``details``. On timeout the tool and everything it started are
    stopped and the error is one line (``hint``: how to give it longer)."""
    # its own process group: an interrupted build stops every compiler it started (microcompiler/cleanup.py)
    proc = cleanup.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, errors="replace")
    lines = []
    expired = threading.Event()

    def expire() -> None:  # stops the group: its output pipe closes and the loop below ends
        expired.set()
        cleanup.stop(proc, grace=2.0)

    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    watchdog.start()
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if line.startswith("["):  # ninja's "[3/12] Building C object ..."
                log("  " + line)
        proc.wait()
    finally:
        watchdog.cancel()
        cleanup.stop(proc, grace=2.0)
        # written when the tool is done: west's pristine step empties the build folder as it starts
        saved = save_log(log_file, cmd, lines, append) if log_file is not None else None
    where = f"; the whole output is in {saved}" if saved else ""
    if expired.is_set():
        raise ToolchainError(
            f"{what} did not finish within {timeout:g} s; stopped it and everything it started"
            + (f" ({hint})" if hint else "")
            + where
        )
    if proc.returncode != 0:
        text = "\n".join(lines)
        overflow = _OVERFLOW.search(text)
        if overflow:
            raise BoardError(
                f"the firmware does not fit: memory region {overflow.group(1)} overflowed by "
                f"{int(overflow.group(2)):,} B" + where
            )
        if saved is None:
            where = " (its last lines below)"
        raise ToolchainError(f"{what} failed (exit {proc.returncode}){where}:", details=error_excerpt(lines))


def save_log(path: Path, cmd: list[str], lines: list[str], append: bool) -> Path | None:
    """Write a tool's output to ``path`` (after what is there when ``append``); None if it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8", errors="replace") as out:
            out.write("$ " + " ".join(cmd) + "\n")
            out.writelines(line + "\n" for line in lines)
    except OSError:
        return None
    return path


# Where a build's output says what went wrong, most telling first: the compiler's or linker's error
# (and the lines before it: "In function", Kconfig's warning), CMake's, ninja's failed step, west's.
_NOISE = re.compile(r"^(\[\d+/\d+\]|-- |FAILED: |ninja: |FATAL ERROR)")
_EXCERPTS = (
    (re.compile(r"(^|:\s*|\s)(fatal )?error:|undefined reference to|multiple definition of"), 2, 4),
    (re.compile(r"CMake Error"), 0, 6),
    (re.compile(r"^FAILED: "), 0, 3),
    (re.compile(r"FATAL ERROR|^ERROR: |Error:"), 2, 2),
)


def error_excerpt(lines: list[str], most: int = 10) -> list[str]:
    """The first error in a build tool's output and a few lines around it (blank lines, progress
    lines and overlong command lines left out); the last lines when no error line is recognised."""
    for pattern, before, after in _EXCERPTS:
        for i, line in enumerate(lines):
            if not pattern.search(line):
                continue
            head: list[str] = []
            for prev in reversed(lines[max(0, i - 2 * before - 2) : i]):
                if len(head) == before or _NOISE.match(prev) or len(prev) > _EXCERPT_LINE_CHARS:
                    break
                if prev.strip():
                    head.insert(0, prev)
            tail: list[str] = []
            for nxt in lines[i + 1 :]:
                if len(tail) == after or _NOISE.match(nxt):
                    break
                if nxt.strip():
                    tail.append(nxt)
            return [_cut(x) for x in [*head, line, *tail][:most]]
    return [_cut(x) for x in lines if x.strip()][-5:]


def _cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= _EXCERPT_LINE_CHARS else line[: _EXCERPT_LINE_CHARS - 3] + "..."


def firmware_size(elf: str | Path) -> tuple[int, int]:
    """(flash_bytes, ram_bytes) of a firmware from its ELF section headers.

    flash: every allocated section with contents (text, rodata, exidx, the initial values of data);
    RAM: every allocated writable section (data, bss, the stack region).
    """
    data = Path(elf).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1:
        raise ToolchainError(f"{elf} is not a 32-bit ELF file")
    endian = "<" if data[5] == 1 else ">"
    (shoff,) = struct.unpack_from(endian + "I", data, 0x20)
    shentsize, shnum = struct.unpack_from(endian + "HH", data, 0x2E)
    flash = ram = 0
    sht_nobits, shf_write, shf_alloc = 8, 0x1, 0x2
    for i in range(shnum):
        _, sh_type, flags, _, _, size = struct.unpack_from(endian + "IIIIII", data, shoff + i * shentsize)
        if not flags & shf_alloc:
            continue
        if sh_type != sht_nobits:
            flash += size
        if flags & shf_write:
            ram += size
    return flash, ram


def model_flash(elf: str | Path, model: str) -> dict[str, int] | None:
    """The flash a model's library takes in a firmware, from the ELF's symbol table: ``code_bytes``
    (its functions, ``<model>_*``) and ``weights_bytes`` (its constant arrays: ``<model>_*`` objects
    with contents, so not the arena or the scratch buffer in .bss). None for a file that is not a
    32-bit ELF (the host build)."""
    data = Path(elf).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1:
        return None
    endian = "<" if data[5] == 1 else ">"
    (shoff,) = struct.unpack_from(endian + "I", data, 0x20)
    shentsize, shnum = struct.unpack_from(endian + "HH", data, 0x2E)
    sections = [struct.unpack_from(endian + "IIIIIIIIII", data, shoff + i * shentsize) for i in range(shnum)]
    sht_symtab, sht_nobits, stt_object, stt_func = 2, 8, 1, 2
    split = {"code_bytes": 0, "weights_bytes": 0}
    prefix = (model + "_").encode()
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != sht_symtab or not entsize:
            continue
        strtab = sections[link][4]
        for k in range(size // entsize):
            st_name, _, st_size, st_info, _, st_shndx = struct.unpack_from(
                endian + "IIIBBH", data, offset + k * entsize
            )
            name = data[strtab + st_name : data.index(b"\0", strtab + st_name)]
            if not st_size or not name.startswith(prefix):
                continue
            if st_info & 0xF == stt_func:
                split["code_bytes"] += st_size
            elif st_info & 0xF == stt_object and st_shndx < len(sections) and sections[st_shndx][1] != sht_nobits:
                split["weights_bytes"] += st_size
    return split


def measured_build(board: Board, elf: Path, log: Log) -> BuildResult:
    flash_bytes, ram_bytes = firmware_size(elf)
    log(
        f"built {elf}: flash {flash_bytes:,} B, RAM {ram_bytes:,} B "
        f"(the board has flash {board.flash.size:,} B, RAM {board.ram.size:,} B)"
    )
    return BuildResult(elf, flash_bytes, ram_bytes)


def check_can_build(project_dir: Path) -> None:
    check_path_is_safe(project_dir, "the project directory")  # a project moved under such a path
    build_dir = project_dir / BUILD_DIR
    where = build_dir if build_dir.is_dir() else project_dir
    if not os.access(where, os.W_OK | os.X_OK):
        raise MicrocompilerError(
            f"cannot build {project_dir}: no write permission for {where} (the build "
            f"writes to {build_dir}); copy the project somewhere writable"
        )
