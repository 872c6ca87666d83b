"""Reading the files a user names (a model, an input array, a tuning log): bounded before reading.

A path may name anything: ``/dev/zero`` (endless), ``/dev/stdin``, a directory, a 20 GB file. Each
is refused in one line before it is read into memory, except a pipe (``<(cat model.tflite)``),
which is read up to the limit and refused past it.
"""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from pathlib import Path

import numpy as np

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


# ---- Arrays and JSON: the numbers in a file bound its cost before anything is allocated ----

MAX_JSON_BYTES = 64 * MiB  # a saved report, a project's record


def npy_header(stream, what: str, fix: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, data bytes the header promises) of a .npy stream, read from its header alone."""
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(version)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError):
        raise MicrocompilerError(f"{what} is not a valid .npy array file (damaged?); {fix}") from None
    if dtype.hasobject:
        raise MicrocompilerError(f"{what} holds Python objects, not numbers; {fix}")
    count = 1
    for d in shape:
        count *= int(d)
    return tuple(int(d) for d in shape), dtype, count * dtype.itemsize


def _check_claim(what: str, shape, present: int, claimed: int, max_elements: int | None, fix: str) -> None:
    if claimed > present:
        raise MicrocompilerError(
            f"{what} claims shape {list(shape)} ({claimed:,} bytes) but holds {present:,} bytes of data "
            f"(damaged or truncated); {fix}"
        )
    count = 1
    for d in shape:
        count *= d
    if max_elements is not None and count > max_elements:
        raise MicrocompilerError(
            f"{what} holds {count:,} values (shape {list(shape)}), more than the model's input can take "
            f"({max_elements:,}); check that the file is meant for this model"
        )


def load_npy(data: bytes, what: str, fix: str, max_elements: int | None = None) -> np.ndarray:
    """The array of a .npy file's bytes, its header checked first: the data it claims must be in
    the file and hold at most ``max_elements`` values, so nothing is allocated past the file's size."""
    stream = io.BytesIO(data)
    shape, _, claimed = npy_header(stream, what, fix)
    _check_claim(what, shape, len(data) - stream.tell(), claimed, max_elements, fix)
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError):
        raise MicrocompilerError(f"{what} is not a valid .npy array file (damaged?); {fix}") from None


def load_npz(data: bytes, what: str, limit: int, fix: str, max_elements: int | None = None) -> dict[str, np.ndarray]:
    """The arrays of an .npz archive's bytes, refused in one line when damaged, when its members
    would unpack to more than ``limit`` bytes (the zip directory) or when a member's header claims
    more data than the member holds or more than ``max_elements`` values (before it is unpacked)."""
    damaged = f"{what} is not a readable .npz archive (damaged?); {fix}"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            unpacked = sum(info.file_size for info in members)
            if unpacked > limit:
                raise MicrocompilerError(
                    f"{what} unpacks to {unpacked:,} bytes, more than microcompiler reads for it ({limit:,}); "
                    "check that the path names the right file"
                )
            arrays = {}
            for info in members:
                if not info.filename.endswith(".npy"):
                    continue
                name = info.filename[: -len(".npy")]
                with archive.open(info) as stream:
                    shape, _, claimed = npy_header(stream, f"{what}:{name}", fix)
                    header = stream.tell()
                _check_claim(f"{what}:{name}", shape, info.file_size - header, claimed, max_elements, fix)
                arrays[name] = np.load(io.BytesIO(archive.read(info)), allow_pickle=False)
            return arrays
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, RuntimeError, NotImplementedError):
        raise MicrocompilerError(damaged) from None


def load_user_array(
    path: str | Path, what: str, fix: str, max_elements: int | None = None, limit: int = MAX_INPUT_BYTES
) -> np.ndarray | dict[str, np.ndarray]:
    """A .npy file's array, or an .npz archive's arrays (a dict), read through the bounds above."""
    data = read_user_file(path, what, limit)
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        return load_npz(data, f"{what} {path}", limit, fix, max_elements)
    return load_npy(data, f"{what} {path}", fix, max_elements)


def read_user_json(path: str | Path, what: str, fix: str, limit: int = MAX_JSON_BYTES):
    """The JSON value of a file the user named (a saved report): bounded like every user file, and
    one line when it is not JSON. The caller checks the value's shape."""
    text = read_user_text(path, what, limit)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise MicrocompilerError(f"{what} {path} is not JSON; {fix}") from None
