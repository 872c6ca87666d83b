"""A directory of per-sample files for ``validate --dataset DIR`` (docs/validate.md).

One file per sample, taken in the order of their names (``sorted``, so ``x10`` before ``x2``: name
them ``x002``, or give the labels as ``filename,label``): ``.npy`` (one-input models), ``.npz`` (one
array per model input, named after the input or ``input<k>``) and images (``.png``, ``.jpg``,
``.jpeg``, ``.bmp``, read with Pillow) for an input of height x width x 1 or 3 channels. An image is
never resized: one of another size is refused, naming the size the input needs. Pixel values
0..255 are real values from ``pixel_range`` (0 to 1 by default) and are quantized like any real
data.

Every entry is hostile until checked: a subdirectory, a device, a pipe or a dangling link is
refused, and so is a file larger than any sample of the model could be (checked before it is read),
each with one line naming the file.
"""

from __future__ import annotations

import io
import os
import stat
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import MicrocompilerError
from microcompiler.user_files import MiB, load_npy, load_npz, read_user_file

ARRAY_SUFFIXES = (".npy", ".npz")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
IMAGE_FORMATS = ("PNG", "JPEG", "BMP")
SUFFIXES = ARRAY_SUFFIXES + IMAGE_SUFFIXES
KINDS = ", ".join(SUFFIXES)
MAX_FILES = 100_000
# headers, compression that does not pay off, padding: what a file may hold beyond its values
SLACK_BYTES = 1 * MiB

# (array, input's metadata, where it came from) -> the model's array (quantized if need be)
ToInput = Callable[[np.ndarray, TensorInfo, str], np.ndarray]


def sample_limit(inputs_meta: list[TensorInfo]) -> int:
    """The most bytes one sample's file may hold: every input element as float64, plus slack."""
    return 8 * sum(int(np.prod(m.shape)) for m in inputs_meta) + SLACK_BYTES


def sample_files(directory: Path, what: str) -> list[Path]:
    """The sample files of ``directory`` sorted by name (hidden files skipped), each a regular file
    of a known kind, or a one-line error naming the first that is not."""
    try:
        names = sorted(e.name for e in os.scandir(directory) if not e.name.startswith("."))
    except OSError as exc:
        raise MicrocompilerError(f"cannot read {what} {directory}: {exc.strerror or exc}") from None
    if not names:
        raise MicrocompilerError(
            f"{what} {directory} has no sample files; put one file per sample in it ({KINDS}), "
            "e.g. numpy.save('DIR/x0.npy', array)"
        )
    if len(names) > MAX_FILES:
        raise MicrocompilerError(f"{what} {directory} holds {len(names):,} files, more than {MAX_FILES:,} samples")
    files = []
    for name in names:
        path = directory / name
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            raise MicrocompilerError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device, pipe or socket)"
            raise MicrocompilerError(
                f"{what} {directory}: {name} is {kind}; the directory holds one file per sample ({KINDS}), move it out"
            )
        if path.suffix.lower() not in SUFFIXES:
            raise MicrocompilerError(
                f"{what} {directory}: {name} is not a sample file (give {KINDS}); move it out of the directory"
            )
        files.append(path)
    return files


def load_directory(
    directory: Path, inputs_meta: list[TensorInfo], to_input: ToInput, pixel_range: tuple[float, float], what: str
) -> list[tuple[str, list[np.ndarray]]]:
    """(file name, model inputs) of every sample file in ``directory``, in the order of the names."""
    limit = sample_limit(inputs_meta)
    most = max(int(np.prod(m.shape)) for m in inputs_meta)  # the values one array of a sample may hold
    samples = []
    for path in sample_files(directory, what):
        size = path.stat().st_size
        if size > limit:
            raise MicrocompilerError(
                f"{what} file {path} holds {size:,} bytes, more than one sample of this model can "
                f"({limit:,}); the directory holds one file per sample"
            )
        data = read_user_file(path, f"{what} file", limit)
        suffix = path.suffix.lower()
        if suffix == ".npy":
            inputs = _one_input(_npy(data, path, most), inputs_meta, to_input, path)
        elif suffix == ".npz":
            inputs = _from_npz(data, path, inputs_meta, to_input, limit, most)
        else:
            inputs = _one_input(_image(data, path, inputs_meta, pixel_range), inputs_meta, to_input, path)
        samples.append((path.name, inputs))
    return samples


def _one_input(array: np.ndarray, inputs_meta: list[TensorInfo], to_input: ToInput, path: Path) -> list[np.ndarray]:
    if len(inputs_meta) != 1:
        raise MicrocompilerError(
            f"{path}: the model has {len(inputs_meta)} inputs; give an .npz file per sample with one array "
            f"per input (numpy.savez('x0.npz', {', '.join(m.name for m in inputs_meta[:2])}, ...))"
        )
    return [to_input(array, inputs_meta[0], str(path))]


def _npy(data: bytes, path: Path, max_elements: int) -> np.ndarray:
    if data[:4] == b"PK\x03\x04":
        raise MicrocompilerError(f"{path} is an .npz archive named .npy; rename it to .npz")
    return load_npy(data, str(path), "save it with numpy.save", max_elements)


def npz_arrays(
    data: bytes, path: Path | str, limit: int, fix: str, max_elements: int | None = None
) -> dict[str, np.ndarray]:
    """The arrays of an .npz archive, every number in it checked before anything is unpacked
    (``user_files.load_npz``)."""
    return load_npz(data, str(path), limit, fix, max_elements)


def input_array(
    arrays: dict[str, np.ndarray], k: int, meta: TensorInfo, count: int, path: Path | str
) -> tuple[str, np.ndarray]:
    """The array of an .npz archive for model input ``k``: named after the input, ``input<k>``, or
    for a one-input model ``x``, ``inputs`` or numpy's default ``arr_0``."""
    names = [meta.name, f"input{k}"] + (["x", "inputs", "arr_0"] if count == 1 else [])
    found = next((n for n in names if n in arrays), None)
    if found is None:
        raise MicrocompilerError(
            f"{path} has no array for model input {k} ('{meta.name}'); name it '{meta.name}' or "
            f"'input{k}' (arrays there: {', '.join(arrays) or 'none'})"
        )
    return found, arrays[found]


def _from_npz(
    data: bytes, path: Path, inputs_meta: list[TensorInfo], to_input: ToInput, limit: int, most: int
) -> list[np.ndarray]:
    names = ", ".join(f"{m.name}=..." for m in inputs_meta[:2])
    arrays = npz_arrays(data, path, limit, f"save one sample's inputs with numpy.savez('x0.npz', {names})", most)
    inputs = []
    for k, meta in enumerate(inputs_meta):
        name, array = input_array(arrays, k, meta, len(inputs_meta), path)
        inputs.append(to_input(array, meta, f"{path}:{name}"))
    return inputs


def image_shape(meta: TensorInfo) -> tuple[int, int, int] | None:
    """(height, width, channels) of an input an image can fill: [1,] H, W[, 1 or 3]."""
    shape = [int(d) for d in meta.shape]
    while len(shape) > 2 and shape[0] == 1:
        shape = shape[1:]
    if len(shape) == 2:
        return shape[0], shape[1], 1
    if len(shape) == 3 and shape[2] in (1, 3):
        return shape[0], shape[1], shape[2]
    return None


def _image(data: bytes, path: Path, inputs_meta: list[TensorInfo], pixel_range: tuple[float, float]) -> np.ndarray:
    meta = inputs_meta[0]
    want = image_shape(meta)
    if len(inputs_meta) != 1 or want is None:
        raise MicrocompilerError(
            f"{path}: an image fills one input of height x width x 1 or 3 channels, but the model's "
            f"input{'s are' if len(inputs_meta) > 1 else ' is'} "
            f"{', '.join(str(list(m.shape)) for m in inputs_meta)}; give .npy or .npz files"
        )
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise MicrocompilerError(
            f"{path}: reading images needs Pillow: pip install 'microcompiler[validate]' (or give .npy files)"
        ) from None
    damaged = f"{path} is not a readable PNG, JPEG or BMP image (damaged?); save it again or give .npy files"
    try:
        with warnings.catch_warnings():  # a large image is refused by its size below, not by a warning
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)  # reads the header only
        height, width, depth = want
        if (image.height, image.width) != (height, width):  # before a pixel is decoded
            raise MicrocompilerError(
                f"{path} is {image.height}x{image.width} but the model input '{meta.name}' needs "
                f"{height}x{width}x{depth} (HxWxC); resize it first (validate never resizes)"
            )
        if image.mode == "P":
            image = image.convert("RGBA" if "transparency" in image.info else "RGB")
        channels = {"1": 1, "L": 1, "RGB": 3}.get(image.mode)
        if channels is None:
            raise MicrocompilerError(
                f"{path}: {image.mode} images are not supported yet (8-bit grey or RGB are); convert it, "
                "or give .npy files"
            )
        if channels != depth:
            raise MicrocompilerError(
                f"{path} is {image.height}x{image.width}x{channels} but the model input '{meta.name}' needs "
                f"{height}x{width}x{depth} (HxWxC); convert it to {'grey' if depth == 1 else 'RGB'} first"
            )
        pixels = np.asarray(image.convert("L" if depth == 1 else "RGB"), dtype=np.float64)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
        raise MicrocompilerError(damaged) from None
    low, high = pixel_range
    real = low + pixels / 255.0 * (high - low)
    return real.reshape(meta.shape).astype(np.float32)
