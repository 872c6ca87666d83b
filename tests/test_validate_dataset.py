"""``validate --dataset FILE --labels FILE --save-outputs FILE`` (issue 27 item 6).

A dataset of real values is quantized with the input's scale and zero point; accuracy against the
labels is computed for the device, TFLite Micro and the float model and checked here against the
TFLite Micro interpreter run by the test itself; RMSE against the float model is reported; every
output is saved, and a file validate did not write is never replaced.
"""

from __future__ import annotations

import json

import numpy as np
from harness import cli
from oracle import tflm_run

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.frontend.tflite import load_tflite
from microcompiler.inputs import quantize_input

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


def tiny_meta() -> TensorInfo:
    graph = load_tflite(TINY)
    t = graph.tensors[graph.inputs[0]]
    return TensorInfo(t.name, "", t.shape, t.dtype, t.nbytes, float(t.quant.scale[0]), int(t.quant.zero_point[0]))


def test_accuracy_against_labels_and_saved_outputs(tmp_path):
    meta = tiny_meta()
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, size=(12, *meta.shape[1:])).astype(np.float32)  # real values, 12 samples
    labels = rng.integers(0, 4, size=12)
    np.savez(tmp_path / "data.npz", x=x[:, None], y=labels)
    saved = tmp_path / "outputs.npz"
    r = cli(
        "validate",
        TINY,
        "--board",
        "host",
        "--dataset",
        tmp_path / "data.npz",
        "--save-outputs",
        saved,
        "--mode",
        "standalone",
        "--json",
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert len(report["samples"]) == 12 and report["bit_exact"]
    # the oracle, on the same quantized inputs: its top-1 against the labels
    q = [quantize_input(x[k][None], meta) for k in range(12)]
    model = open(TINY, "rb").read()
    theirs = [tflm_run(model, [qk])[0] for qk in q]
    expected = float(np.mean([np.argmax(t) == label for t, label in zip(theirs, labels)]))
    for source in ("standalone", "tflm"):
        m = report["labels"][source]
        assert m["accuracy"] == expected and m["samples"] == 12
        assert sum(map(sum, m["confusion"])) == 12
    with np.load(saved) as out:
        assert np.array_equal(out["labels"], labels)
        assert np.array_equal(out["tflm_output0"].reshape(12, -1), np.stack(theirs).reshape(12, -1))
        assert np.array_equal(out["standalone_output0"], out["tflm_output0"].reshape(out["standalone_output0"].shape))
    other = tmp_path / "other.npz"
    np.savez(other, mine=np.zeros(3))
    r = cli("validate", TINY, "--board", "host", "--dataset", tmp_path / "data.npz", "--save-outputs", other)
    assert r.returncode == 2 and "was not written by validate" in r.stderr
    with np.load(other) as kept:
        assert kept.files == ["mine"]


def test_a_csv_dataset_with_the_float_model_gives_rmse_and_labels_from_a_file(tmp_path, shared_models):
    int8 = shared_models / "tflm/hello_world_int8.tflite"
    ref = shared_models / "tflm/hello_world_float.tflite"
    xs = np.linspace(0, 6.2, 9)
    (tmp_path / "x.csv").write_text("x\n" + "\n".join(f"{v:.4f}" for v in xs) + "\n")
    (tmp_path / "y.txt").write_text("\n".join("0" for _ in xs) + "\n")
    r = cli(
        "validate",
        int8,
        "--board",
        "host",
        "--dataset",
        tmp_path / "x.csv",
        "--reference",
        ref,
        "--mode",
        "standalone",
        "--json",
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    against_float = next(c for c in report["comparisons"] if c["against"] == "float")["outputs"][0]
    assert 0 < against_float["rmse"] < 0.2 and against_float["rmse"] >= against_float["mean_abs_error"]
    text = cli(
        "validate",
        int8,
        "--board",
        "host",
        "--dataset",
        tmp_path / "x.csv",
        "--reference",
        ref,
        "--mode",
        "standalone",
        timeout=900,
    ).stdout
    float_row = next(line for line in text.splitlines() if line.split()[:2] == ["standalone", "float"])
    assert float_row.split()[3] == "-"  # no "exact 0.00%" against the float model
    bad = cli(
        "validate",
        int8,
        "--board",
        "host",
        "--dataset",
        tmp_path / "x.csv",
        "--labels",
        tmp_path / "y.txt",
        "--inputs",
        "3",
    )
    assert bad.returncode == 2 and "--dataset and --inputs both give the samples" in bad.stderr


def test_a_float_array_for_an_int8_input_gets_the_quantization_formula(tmp_path):
    meta = tiny_meta()
    np.save(tmp_path / "x.npy", np.zeros(meta.shape, np.float32))
    r = cli("run", TINY, "--input", tmp_path / "x.npy")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"scale {meta.scale:g}, zero point {meta.zero_point}); quantize it: np.clip(np.round(x / " in r.stderr
