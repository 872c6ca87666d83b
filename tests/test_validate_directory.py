"""``validate --dataset DIR --labels FILE`` (issue 27 item 6): a directory of per-sample files.

Images (grey PNG, RGB BMP), .npy arrays and per-sample .npz files (multi-input models) are read in
the order of their names, pixels mapped to real values by --pixel-range and quantized; every saved
output is checked here against the TFLite Micro interpreter run by the test itself on the inputs the
test computes on its own, and the accuracy against labels given one per line or as filename,label
rows. Hostile entries (a subdirectory, a pipe, a huge file, a dangling link, a damaged image, an
archive that unpacks to gigabytes) are refused with one line before anything runs.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from harness import cli
from oracle import Oracle
from PIL import Image
from test_op_add_mul import binary_model

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.frontend.tflite import load_tflite
from microcompiler.inputs import quantize_input

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"  # input [1, 16, 16, 1] int8, 4 classes


def input_meta(model) -> list[TensorInfo]:
    graph = load_tflite(model)
    metas = []
    for i in graph.inputs:
        t = graph.tensors[i]
        metas.append(
            TensorInfo(t.name, "", t.shape, t.dtype, t.nbytes, float(t.quant.scale[0]), int(t.quant.zero_point[0]))
        )
    return metas


def validate_json(model, *args, timeout=900) -> dict:
    r = cli("validate", model, "--board", "host", "--mode", "host-driven", "--json", *args, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_grey_images_and_arrays_in_name_order_with_labels_by_file_name(tmp_path):
    meta = input_meta(TINY)[0]
    rng = np.random.default_rng(7)
    data = tmp_path / "samples"
    data.mkdir()
    pixels = {f"img{k}.png": rng.integers(0, 256, (16, 16), dtype=np.uint8) for k in (2, 0, 1)}
    for name, p in pixels.items():
        Image.fromarray(p).save(data / name)
    real = rng.uniform(-1, 1, (16, 16, 1)).astype(np.float32)
    np.save(data / "img3.npy", real)  # real values, quantized like the pixels
    order = ["img0.png", "img1.png", "img2.png", "img3.npy"]
    low, high = -1.0, 1.0
    expected = [quantize_input((low + pixels[n] / 255.0 * (high - low)).reshape(1, 16, 16, 1), meta) for n in order[:3]]
    expected.append(quantize_input(real.reshape(1, 16, 16, 1), meta))
    oracle = Oracle(open(TINY, "rb").read())
    theirs = [oracle.run([x])[0] for x in expected]
    labels = {n: int(k % 4) for k, n in enumerate(order)}
    (tmp_path / "labels.csv").write_text(
        "filename,label\n" + "".join(f"samples/{n},{labels[n]}\n" for n in reversed(order))
    )
    saved = tmp_path / "out.npz"
    report = validate_json(
        TINY,
        "--dataset",
        data,
        "--labels",
        tmp_path / "labels.csv",
        f"--pixel-range={low},{high}",  # the '=' form, as argparse allows for any option
        "--save-outputs",
        saved,
    )
    assert report["samples"] == order and report["bit_exact"]
    with np.load(saved) as out:
        assert np.array_equal(out["tflm_output0"].reshape(4, -1), np.stack(theirs).reshape(4, -1))
        assert np.array_equal(out["host_driven_output0"].reshape(4, -1), np.stack(theirs).reshape(4, -1))
        assert out["labels"].tolist() == [labels[n] for n in order]
    accuracy = np.mean([np.argmax(t) == labels[n] for t, n in zip(theirs, order)])
    assert report["labels"]["tflm"]["accuracy"] == accuracy == report["labels"]["host-driven"]["accuracy"]
    # the same labels one per line, in the samples' order, give the same accuracy
    (tmp_path / "labels.txt").write_text("".join(f"{labels[n]}\n" for n in order))
    again = validate_json(TINY, "--dataset", data, "--labels", tmp_path / "labels.txt", "--pixel-range", "-1,1")
    assert again["labels"]["tflm"] == report["labels"]["tflm"]


def test_rgb_images_for_a_colour_model(tmp_path, shared_models):
    model = shared_models / "mlperf_tiny/pretrainedResnet_quant.tflite"  # [1, 32, 32, 3], scale 1, zp -128
    meta = input_meta(model)[0]
    rng = np.random.default_rng(1)
    (tmp_path / "rgb").mkdir()
    pictures = [rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(2)]
    for k, p in enumerate(pictures):
        Image.fromarray(p, "RGB").save(tmp_path / "rgb" / f"car{k}.bmp")
    saved = tmp_path / "out.npz"
    report = validate_json(model, "--dataset", tmp_path / "rgb", "--pixel-range", "0,255", "--save-outputs", saved)
    assert report["samples"] == ["car0.bmp", "car1.bmp"] and report["bit_exact"]
    oracle = Oracle(model.read_bytes())
    theirs = [oracle.run([quantize_input(p.reshape(1, 32, 32, 3).astype(np.float64), meta)])[0] for p in pictures]
    assert np.array_equal(quantize_input(pictures[0].astype(np.float64), meta), pictures[0].astype(np.int16) - 128)
    with np.load(saved) as out:
        assert np.array_equal(out["host_driven_output0"].reshape(2, -1), np.stack(theirs).reshape(2, -1))


def test_a_two_input_model_takes_one_npz_per_sample(tmp_path):
    model = tmp_path / "add.tflite"
    model.write_bytes(binary_model("ADD", "int8", [1, 4], [1, 4]))
    rng = np.random.default_rng(2)
    (tmp_path / "pairs").mkdir()
    pairs = [[rng.integers(-128, 128, (1, 4), dtype=np.int8) for _ in range(2)] for _ in range(3)]
    np.savez(tmp_path / "pairs" / "s0.npz", x0=pairs[0][0], x1=pairs[0][1])  # named after the inputs
    np.savez(tmp_path / "pairs" / "s1.npz", input0=pairs[1][0], input1=pairs[1][1])  # or by position
    np.savez_compressed(tmp_path / "pairs" / "s2.npz", x1=pairs[2][1], x0=pairs[2][0])
    (tmp_path / "y.txt").write_text("0\n1\n2\n")
    saved = tmp_path / "out.npz"
    report = validate_json(
        model, "--dataset", tmp_path / "pairs", "--labels", tmp_path / "y.txt", "--save-outputs", saved
    )
    assert report["samples"] == ["s0.npz", "s1.npz", "s2.npz"] and report["bit_exact"]
    oracle = Oracle(model.read_bytes())
    theirs = [oracle.run(p)[0] for p in pairs]
    with np.load(saved) as out:
        assert np.array_equal(out["host_driven_output0"].reshape(3, 4), np.stack(theirs).reshape(3, 4))
    expected = np.mean([np.argmax(t) == k for k, t in enumerate(theirs)])
    assert report["labels"]["host-driven"]["accuracy"] == expected


def test_the_python_api_reads_a_directory_too_jpeg_included(tmp_path):
    from microcompiler import api

    meta = input_meta(TINY)[0]
    (tmp_path / "d").mkdir()
    for k in range(2):
        Image.fromarray(np.full((16, 16), 40 * k, np.uint8)).save(tmp_path / "d" / f"p{k}.png")
    Image.fromarray(np.full((16, 16), 200, np.uint8)).save(tmp_path / "d" / "p2.jpg")  # flat: decodes exactly
    out = tmp_path / "out.npz"
    report = api.validate(TINY, "host", dataset=tmp_path / "d", modes=("host-driven",), pixel_range=(0.0, 8.0))
    assert report["samples"] == ["p0.png", "p1.png", "p2.jpg"] and report["passed"]
    r = cli(
        "validate",
        TINY,
        "--board",
        "host",
        "--mode",
        "host-driven",
        "--dataset",
        tmp_path / "d",
        "--pixel-range",
        "0,8",
        "--save-outputs",
        out,
    )
    assert r.returncode == 0, r.stderr
    oracle = Oracle(open(TINY, "rb").read())
    x = quantize_input(np.full((1, 16, 16, 1), 200 / 255 * 8.0), meta)
    with np.load(out) as saved:
        assert np.array_equal(saved["tflm_output0"][2].ravel(), oracle.run([x])[0].ravel())


def test_file_names_reach_the_terminal_only_as_text(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    np.save(d / "a\x1b]0;pwned\x07.npy", np.zeros((1, 16, 16, 1), np.int8))
    r = cli("validate", TINY, "--board", "host", "--mode", "host-driven", "--dataset", d)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout + r.stderr and "\\x1b]0;pwned" in r.stderr
    report = validate_json(TINY, "--dataset", d)
    assert report["samples"] == ["a\x1b]0;pwned\x07.npy"]  # JSON keeps the name as it is, escaped


def hostile(tmp_path, case):
    """A dataset directory with one bad entry beside a good sample; the fragment the error must name."""
    d = tmp_path / "d"
    d.mkdir()
    np.save(d / "a.npy", np.zeros((1, 16, 16, 1), np.int8))
    if case == "wrong size":
        Image.fromarray(np.zeros((20, 16), np.uint8)).save(d / "b.png")
        return d, "b.png is 20x16 but the model input 'input' needs 16x16x1 (HxWxC)"
    if case == "colour for grey":
        Image.fromarray(np.zeros((16, 16, 3), np.uint8), "RGB").save(d / "b.png")
        return d, "b.png is 16x16x3 but the model input 'input' needs 16x16x1 (HxWxC); convert it to grey first"
    if case == "subdirectory":
        (d / "cats").mkdir()
        return d, "cats is a directory"
    if case == "pipe":
        os.mkfifo(d / "b.npy")
        return d, "b.npy is not a regular file"
    if case == "huge":
        with open(d / "b.npy", "wb") as f:
            f.truncate(3 << 30)  # sparse: 3 GiB that take no disk
        return d, "b.npy holds 3,221,225,472 bytes, more than one sample of this model can"
    if case == "dangling link":
        os.symlink(tmp_path / "gone.npy", d / "b.npy")
        return d, "cannot read --dataset file"
    if case == "unknown kind":
        (d / "notes.tiff").write_bytes(b"II*\0")
        return d, "notes.tiff is not a sample file"
    if case == "damaged image":
        (d / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
        return d, "b.png is not a readable PNG, JPEG or BMP image (damaged?)"
    if case == "unpacks to gigabytes":
        np.savez_compressed(d / "b.npz", x=np.zeros(300_000_000, np.int8))  # 300 MB of zeros, ~300 KB
        return d, "b.npz unpacks to 300,000,"
    if case == "empty":
        (d / "a.npy").unlink()
        return d, "has no sample files"
    raise AssertionError(case)


CASES = [
    "wrong size",
    "colour for grey",
    "subdirectory",
    "pipe",
    "huge",
    "dangling link",
    "unknown kind",
    "damaged image",
    "unpacks to gigabytes",
    "empty",
]


@pytest.mark.parametrize("case", CASES)
def test_hostile_directory_entries_are_one_line_errors(tmp_path, case):
    directory, fragment = hostile(tmp_path, case)
    r = cli("validate", TINY, "--board", "host", "--dataset", directory, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert fragment in r.stderr, r.stderr


def test_labels_that_do_not_fit_the_files(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    for k in range(3):
        np.save(d / f"x{k}.npy", np.zeros((1, 16, 16, 1), np.int8))
    (tmp_path / "part.csv").write_text("x0.npy,1\nx2.npy,0\n")
    (tmp_path / "two.csv").write_text("x0.npy,1\nx0.npy,2\nx1.npy,0\nx2.npy,0\n")
    np.savez(tmp_path / "data.npz", x=np.zeros((3, 1, 16, 16, 1), np.int8))
    for dataset, labels, fragment in [
        (d, "part.csv", "has no label for x1.npy; give one 'filename,label' row per sample file"),
        (d, "two.csv", "gives x0.npy two classes (1 and 2)"),
        (
            tmp_path / "data.npz",
            "part.csv",
            "gives 'filename,label' rows, but the samples are not files of a directory",
        ),
    ]:
        r = cli("validate", TINY, "--board", "host", "--dataset", dataset, "--labels", tmp_path / labels, timeout=120)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and fragment in r.stderr, r.stderr
    r = cli("validate", TINY, "--board", "host", "--dataset", d, "--pixel-range", "1,1")
    assert r.returncode == 2 and "--pixel-range" in r.stderr and "two different finite numbers" in r.stderr
