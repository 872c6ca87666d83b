"""Reading the files a user names (a model, an input array, a tuning log): bounded before reading.

A path may name anything: ``/dev/zero`` (endless), ``/dev/stdin``, a directory, a 20 GB file. Each
is refused in one line before it is read into memory, except a pipe (``<(cat model.tflite)``),
which is read up to the limit and refused past it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from microcompiler.errors import MicrocompilerError

MiB = 1 << 20
MAX_MODEL_BYTES = 1024 * MiB  # far beyond any microcontroller's flash; a .tflite is at most 2 GiB anyway
MAX_INPUT_BYTES = 512 * MiB  # one input array (a .npy file)
MAX_TEXT_BYTES = 64 * MiB  # a tuning log, a board file


def read_user_file(
    path: str | Path, what: str, limit: int, error: type[MicrocompilerError] = MicrocompilerError
) -> bytes:
    """The bytes of ``path`` (``what``: how the message names it), or a one-line ``error`` when it is
    not a regular file or pipe, or holds more than ``limit`` bytes."""
    path = Path(path)
    too_big = (
        f"{what} {path} is larger than {limit // MiB:,} MiB, more than microcompiler reads for it; "
        "check that the path names the right file"
    )
    try:
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno())
            if stat.S_ISREG(mode.st_mode):
                if mode.st_size > limit:
                    raise error(too_big)
            elif not stat.S_ISFIFO(mode.st_mode):
                kind = "a directory" if stat.S_ISDIR(mode.st_mode) else "a device or socket"
                raise error(f"{what} {path} is {kind}, not a file; give the path of a file")
            data = f.read(limit + 1)
    except IsADirectoryError:
        raise error(f"{what} {path} is a directory, not a file; give the path of a file") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except MemoryError:
        raise error(too_big) from None
    if len(data) > limit:
        raise error(too_big)
    return data


def read_user_text(
    path: str | Path, what: str, limit: int = MAX_TEXT_BYTES, error: type[MicrocompilerError] = MicrocompilerError
) -> str:
    """A UTF-8 text file the user named; a binary file is refused in one line."""
    data = read_user_file(path, what, limit, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{what} {path} is not a text file (not UTF-8); give the file microcompiler wrote") from None
