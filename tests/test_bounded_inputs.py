"""Every number from a file bounds its cost before it is used (issue 35 item 1).

Label values are checked against the model's classes, a .npy/.npz header against the data the file
holds and the input's size, an image by its header's size, a saved report through the bounded
reader with every field it uses typed: each a one-line error, before any run, under a 2 GB
address-space limit (``ulimit -v 2000000``), where the file's numbers once asked for gigabytes or
terabytes.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"  # input [1, 16, 16, 1] int8, 4 classes
ADDRESS_SPACE = 2_000_000 * 1024  # ulimit -v 2000000


def limited(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``python ARGV`` from the repository root under the address-space limit."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, timeout=timeout, preexec_fn=limit
    )


def assert_one_line(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr


def huge_npy(path: Path, shape=(1 << 40,), dtype="<f8") -> Path:
    """A 200-byte .npy whose header claims ``shape`` (2^40 float64: 8 TiB)."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": dtype, "fortran_order": False, "shape": shape})
        f.write(b"\0" * 100)
    return path


def png_bomb(path: Path) -> Path:
    """A small palette PNG of 12000 x 12000 pixels (its pixels decode to 144 MB, as RGB 432 MB)."""
    from PIL import Image

    Image.new("P", (12000, 12000)).save(path, optimize=True)
    return path


# ---- the library's readers, all cases in one interpreter under the limit ----

BATCH = textwrap.dedent(
    """
    import json, sys
    from microcompiler.errors import MicrocompilerError
    from microcompiler.frontend.tflite import load_tflite
    from microcompiler.codegen.model_info import TensorInfo
    from microcompiler.inputs import load_inputs, load_input_steps
    from microcompiler.validation.dataset import load_dataset, load_labels
    from microcompiler.analysis.compare import load_report, side_from_report

    graph = load_tflite(sys.argv[1])
    t = graph.tensors[graph.inputs[0]]
    meta = [TensorInfo(t.name, "", t.shape, t.dtype, t.nbytes, float(t.quant.scale[0]), int(t.quant.zero_point[0]))]
    results = {}
    for name, call in json.loads(sys.argv[2]).items():
        kind, *args = call
        try:
            if kind == "labels":
                load_labels(args[0], 3, None, 4)
            elif kind == "input":
                load_inputs([args[0]], meta)
            elif kind == "steps":
                load_input_steps([args[0]], meta, 2)
            elif kind == "dataset":
                load_dataset(args[0], meta)
            elif kind == "report":
                side_from_report(load_report(args[0]), "B r.json")
            results[name] = "accepted"
        except MicrocompilerError as exc:
            results[name] = "error: " + str(exc)
        except BaseException as exc:
            results[name] = "raw: " + type(exc).__name__ + ": " + str(exc)[:200]
    print(json.dumps(results))
    """
)


def cases(tmp: Path) -> dict[str, tuple[list, str]]:
    """name -> (the call, a fragment its one-line error holds)."""
    out: dict[str, tuple[list, str]] = {}

    def labels(name: str, text: str, fragment: str) -> None:
        (tmp / f"{name}.txt").write_text(text)
        out[name] = (["labels", str(tmp / f"{name}.txt")], fragment)

    labels("label_30000", "0\n30000\n1\n", "class 30000 is not one of the model's 4 classes (0 to 3)")
    labels("label_negative", "0\n-5\n1\n", "class -5 is not one of the model's 4 classes")
    labels("label_2_62", f"0\n{2**62}\n1\n", f"class {2**62} is not one of")
    labels("label_23_digits", "0\n12345678901234567890123\n1\n", "class 12345678901234567890123 is not one of")
    labels("label_not_integer", "0\n1.5\n1\n", "line 2 ('1.5') is not an integer class")
    np.save(tmp / "u64.npy", np.array([0, 2**63 + 5, 1], np.uint64))
    out["label_npy_uint64"] = (["labels", str(tmp / "u64.npy")], f"class {2**63 + 5} is not one of")
    np.save(tmp / "float_labels.npy", np.array([0.0, 1.5, 1.0]))
    out["label_npy_float"] = (["labels", str(tmp / "float_labels.npy")], "give one integer class per sample")
    huge_npy(tmp / "huge_labels.npy", dtype="<i8")
    out["label_npy_huge"] = (["labels", str(tmp / "huge_labels.npy")], "but holds 100 bytes of data")

    huge = huge_npy(tmp / "huge.npy")
    out["input_huge"] = (["input", str(huge)], "claims shape [1099511627776] (8,796,093,022,208 bytes)")
    out["steps_huge"] = (["steps", str(huge)], "claims shape [1099511627776]")
    fits = tmp / "too_many.npy"
    np.save(fits, np.zeros(100_000, np.int8))  # present in the file, but far more than the input's 256
    out["input_too_many"] = (["input", str(fits)], "holds 100,000 values (shape [100000]), more than")
    np.save(tmp / "u.npy", np.zeros(3))
    data = (tmp / "u.npy").read_bytes()
    with open(tmp / "damaged.npy", "wb") as f:
        f.write(data[:40])  # a cut header
    out["input_damaged"] = (["input", str(tmp / "damaged.npy")], "is not a valid .npy array file")

    import zipfile

    with zipfile.ZipFile(tmp / "member.npz", "w") as z:  # an .npz whose member claims 8 TiB
        z.writestr("x.npy", huge.read_bytes())
    out["dataset_npz_member"] = (["dataset", str(tmp / "member.npz")], "member.npz:x claims shape [1099511627776]")
    d = tmp / "dir_npy"
    d.mkdir()
    huge_npy(d / "a.npy")
    out["dataset_dir_npy"] = (["dataset", str(d)], "a.npy claims shape [1099511627776]")
    d = tmp / "dir_npz"
    d.mkdir()
    (d / "a.npz").write_bytes((tmp / "member.npz").read_bytes())
    out["dataset_dir_npz"] = (["dataset", str(d)], "a.npz:x claims shape")
    d = tmp / "dir_png"
    d.mkdir()
    png_bomb(d / "a.png")
    out["dataset_png_12000"] = (["dataset", str(d)], "a.png is 12000x12000 but the model input")

    x = np.zeros((3, 16, 16, 1), np.float32)
    x[1, 2, 3, 0] = np.nan
    np.savez(tmp / "nan.npz", x=x)
    out["dataset_nan"] = (["dataset", str(tmp / "nan.npz")], "nan.npz:x[1] holds nan at [2, 3, 0] (1 value(s) NaN")
    (tmp / "inf.csv").write_text("\n".join(",".join(["0"] * 255 + [v]) for v in ("0", "inf", "-inf")) + "\n")
    out["dataset_inf_csv"] = (["dataset", str(tmp / "inf.csv")], "inf.csv row 2 holds inf at [0, 15, 15, 0]")

    def report(name: str, value, fragment: str) -> None:
        (tmp / f"{name}.json").write_text(value if isinstance(value, str) else json.dumps(value))
        out[name] = (["report", str(tmp / f"{name}.json")], fragment)

    out["report_dev_zero"] = (["report", "/dev/zero"], "/dev/zero is a device or socket, not a file")
    out["report_directory"] = (["report", str(tmp)], "is a directory, not a file")
    report("report_not_json", "{", "is not JSON")
    report("report_string", '"a string"', "the report is not an object")
    report("report_null", None, "the report is not an object")
    report("report_list", [1, 2], "the report is not an object")
    report("report_unknown", {"x": 1}, "is not a report compare reads")
    report("report_layers_number", {"layers": 5, "totals": {}, "model": "m"}, "layers is not a list")
    report("report_totals_list", {"layers": [], "totals": [], "model": "m"}, "totals is not an object")
    report("report_model_number", {"layers": [], "totals": {}, "model": 3}, "the report.model is not text")
    layer = {"index": 0, "name": "a", "kind": "CONV_2D", "estimated_instructions": "many"}
    report("report_layer_string", {"layers": [layer], "totals": {}, "model": "m"}, "layers[0].estimated_instructions")
    report("report_layer_null", {"layers": [None], "totals": {}, "model": "m"}, "layers[0] is not an object")
    report(
        "report_time_string",
        {"layers": [], "totals": {}, "model": "m", "estimated_time": "1 s"},
        "estimated_time is not an object",
    )
    report("report_bench_inference", {"inference": "fast", "operators": [], "model": "m"}, "inference is not an object")
    report(
        "report_bench_operator",
        {"inference": {"seconds": 1.0}, "operators": [{"time": {"seconds": [1]}}], "model": "m"},
        "operators[0].time.seconds is not a number",
    )
    report(
        "report_bench_peak",
        {"inference": {"seconds": 1.0}, "operators": [], "model": "m", "memory_peak": {"arena_bytes": True}},
        "memory_peak.arena_bytes is not a number",
    )
    return out


def test_every_number_from_a_file_is_refused_in_one_line_before_it_costs_memory(tmp_path):
    table = cases(tmp_path)
    proc = limited("-c", BATCH, TINY, json.dumps({name: call for name, (call, _) in table.items()}))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr  # no numpy or Pillow warning either
    results = json.loads(proc.stdout)
    for name, (_, fragment) in table.items():
        got = results[name]
        assert got.startswith("error: ") and "\n" not in got, (name, got)
        assert fragment in got, (name, got)


def test_a_saved_report_that_is_right_is_still_read(tmp_path):
    """The typed reader accepts what analyze --json prints (the checks above refuse, not everything)."""
    from microcompiler.analysis import analyze_model
    from microcompiler.analysis.compare import load_report, side_from_report

    saved = tmp_path / "a.json"
    saved.write_text(json.dumps(analyze_model(TINY, None)))
    side = side_from_report(load_report(saved), "A a.json")
    assert side.model and side.layers and side.instructions == sum(layer["instructions"] for layer in side.layers)


# ---- the CLI: exit 2, one line, under the limit ----


def test_validate_refuses_a_label_past_the_classes_before_the_run(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.zeros((3, 16, 16, 1), np.float32))
    (tmp_path / "y.txt").write_text("0\n30000\n1\n")
    proc = limited(
        "-m", "microcompiler.cli", "validate", TINY, "--board", "host", "--dataset", str(tmp_path / "d.npz"),
        "--labels", str(tmp_path / "y.txt"),
    )  # fmt: skip
    assert_one_line(proc, "class 30000 is not one of the model's 4 classes (0 to 3)")
    assert "standalone" not in proc.stdout and proc.stdout == ""  # refused before the run: nothing ran


def test_run_refuses_an_input_whose_header_claims_terabytes(tmp_path):
    proc = limited("-m", "microcompiler.cli", "run", TINY, "--input", str(huge_npy(tmp_path / "x.npy")))
    assert_one_line(proc, "claims shape [1099511627776]", "holds 100 bytes of data")


@pytest.mark.parametrize("other", ["/dev/zero", "string"])
def test_compare_refuses_a_device_and_a_damaged_report(tmp_path, other):
    if other == "string":
        (tmp_path / "s.json").write_text('"a string"')
        other = str(tmp_path / "s.json")
    saved = tmp_path / "a.json"
    saved.write_text("{}")
    proc = limited("-m", "microcompiler.cli", "compare", other, str(saved))
    assert_one_line(proc, "is a device or socket" if other == "/dev/zero" else "is not an object")


# ---- refuse early (item 6): before anything is built or run ----


def test_validate_refuses_one_path_for_the_report_and_the_saved_outputs(tmp_path):
    both = tmp_path / "out.npz"
    proc = limited(
        "-m", "microcompiler.cli", "validate", TINY, "--board", "host", "--html", str(both),
        "--save-outputs", str(both),
    )  # fmt: skip
    assert_one_line(proc, "--html and --save-outputs both name", "give each its own file")
    assert proc.stdout == "" and not both.exists()


def test_validate_refuses_nan_samples_for_a_quantized_input_before_the_run(tmp_path):
    x = np.zeros((2, 16, 16, 1), np.float32)
    x[0, 0, 0, 0] = np.inf
    np.savez(tmp_path / "d.npz", x=x)
    proc = limited("-m", "microcompiler.cli", "validate", TINY, "--board", "host", "--dataset", str(tmp_path / "d.npz"))
    assert_one_line(proc, "d.npz:x[0] holds inf at [0, 0, 0]", "quantized model input")
    assert proc.stdout == ""  # refused before a run; and no numpy warning on stderr (one line)
