"""Every command on an ONNX model (issue 36, part 3): validate against ONNX Runtime, bench, analyze, tune,
create-project, the report pages and the API; damaged files get one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from harness import cli
from onnx import helper
from onnx_models import MODELS, assert_same_bits, const, model, session

from microcompiler import api
from microcompiler.errors import MicrocompilerError

DENSE = MODELS / "dense_autoencoder_float32.onnx"
CNN = MODELS / "small_cnn_float32.onnx"


def _one_line_exit_2(result, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-500:])
    assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
    for needle in needles:  # the reason: on stderr's line, or on the lines before it (analyze's per-kind list)
        assert needle in result.stderr + result.stdout, (result.stdout[-500:], result.stderr)


def test_api_validate_and_analyze_against_onnxruntime():
    """api.validate on the host: the dense autoencoder and the QDQ DS-CNN equal ONNX Runtime bit for bit (a
    model within the float tolerance: docs/onnx.md's validate of the PyTorch model, run by test_docs);
    api.analyze takes the .onnx file."""
    report = api.validate(DENSE, "host", inputs=2, modes=("host-driven",))
    assert report["passed"] and report["bit_exact"], report["comparisons"]
    assert {c["against"] for c in report["comparisons"]} == {"ort"}
    report = api.validate(MODELS / "ds_cnn_qdq_int8.onnx", "host", inputs=2, modes=("standalone",))
    assert report["passed"] and report["bit_exact"], report["comparisons"]  # QDQ int8: ONNX Runtime's bits
    analysis = api.analyze(CNN, "mps2_an386")
    assert analysis["model"] == "small_cnn_float32" and analysis["totals"]["macs"] > 0


def test_validate_cli_json_and_html(tmp_path):
    html = tmp_path / "report.html"
    result = cli(
        "validate", DENSE, "--board", "host", "--inputs", "2", "--mode", "standalone", "--json", "--html", html
    )
    assert result.returncode == 0, result.stderr[-1000:]
    report = json.loads(result.stdout)
    assert report["bit_exact"] and report["comparisons"][0]["against"] == "ort"
    page = html.read_text()
    assert "dense_autoencoder_float32" in page and "FULLY_CONNECTED" in page
    refused = cli("validate", DENSE, "--board", "host", "--reference", DENSE)
    _one_line_exit_2(refused, "drop --reference")


def test_missing_onnxruntime_one_line(tmp_path):
    """Without onnxruntime (hidden from the import system), validate names the extra to install."""
    code = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] == 'onnxruntime': raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from microcompiler.cli import main\n"
        f"sys.exit(main(['validate', {str(DENSE)!r}, '--board', 'host', '--inputs', '1']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    _one_line_exit_2(result, "pip install 'microcompiler[onnx]'")


def test_bench_and_run_equal_onnxruntime(tmp_path):
    report = api.bench(DENSE, "host", number=1, repeat=1)
    assert report["model"] == "dense_autoencoder_float32" and len(report["operators"]) >= 4
    x = np.random.default_rng(9).standard_normal((1, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    result = cli("run", DENSE, "--board", "host", "--input", tmp_path / "x.npy", "--json")
    assert result.returncode == 0, result.stderr[-1000:]
    ours = np.array(json.loads(result.stdout)["outputs"][0], np.float32)
    assert_same_bits(ours, session(DENSE).run(None, {"input": x})[0], "run --json vs ONNX Runtime")


@pytest.mark.long
def test_create_project_renders_every_template(tmp_path):
    for template in ("baremetal", "zephyr"):
        out = tmp_path / template
        made = cli("create-project", CNN, "--board", "mps2_an386", "--template", template, "-o", out)
        assert made.returncode == 0, made.stderr[-1000:]
        assert (out / "microcompiler-project.json").is_file() and any(out.rglob("*.c")), template


def test_damaged_onnx_files_one_line(tmp_path):
    good = DENSE.read_bytes()
    cases = {}
    (tmp_path / "cut.onnx").write_bytes(good[: len(good) // 2])
    cases["cut"] = "ONNX"
    rng = np.random.default_rng(1)
    wrong = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [1, 4]}, {"y": [1, 2]}, [const(rng, "w", (4, 2))]
    )
    wrong.graph.node[0].output[0] = "elsewhere"  # the graph's output is never written
    onnx.save(wrong, tmp_path / "wrong.onnx")
    cases["wrong"] = "never written"
    shapes = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [1, 4]}, {"y": [1, 2]}, [const(rng, "w", (4, 2))]
    )
    shapes.graph.initializer[0].dims[0] = 5  # weights [5, 2] after an input of 4
    shapes.graph.initializer[0].raw_data = rng.standard_normal(10).astype(np.float32).tobytes()
    onnx.save(shapes, tmp_path / "shapes.onnx")
    cases["shapes"] = "do not fit"
    folder = tmp_path / "ext"
    folder.mkdir()
    ext = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [1, 64]}, {"y": [1, 32]}, [const(rng, "w", (64, 32))]
    )
    onnx.save(ext, folder / "m.onnx", save_as_external_data=True, location="m.bin", size_threshold=0)
    bad = onnx.load(folder / "m.onnx", load_external_data=False)
    for entry in bad.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = "/etc/passwd"
    onnx.save(bad, tmp_path / "outside.onnx")
    cases["outside"] = "outside the model's folder"
    commands = {
        "cut": ("analyze",),
        "wrong": ("compile", "-o", tmp_path / "out"),
        "shapes": ("bench", "--board", "host"),
        "outside": ("validate", "--board", "host"),
    }
    for name, needle in cases.items():
        command = commands[name]
        _one_line_exit_2(cli(command[0], tmp_path / f"{name}.onnx", *command[1:]), needle)


def test_api_damaged_model_raises_one_line(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07" + b"\xff" * 40)
    with pytest.raises(MicrocompilerError, match="not an ONNX model"):
        api.analyze(tmp_path / "bad.onnx")


@pytest.mark.long
def test_validate_on_board_and_tune(tmp_path):
    """mps2_an386 (M4): validate's standalone and host-driven runs equal ONNX Runtime; tune checks the
    CNN's outputs against ONNX Runtime and writes a log that compile takes."""
    result = cli("validate", DENSE, "--board", "mps2_an386", "--inputs", "2", "--json")
    assert result.returncode == 0, result.stderr[-1000:]
    report = json.loads(result.stdout)
    assert report["bit_exact"] and report["modes"] == ["standalone", "host-driven"]
    log = tmp_path / "tuning.json"
    tuned = cli("tune", CNN, "--board", "mps2_an386", "--output", log, "--json", timeout=1200)
    assert tuned.returncode == 0, tuned.stderr[-1000:]
    assert json.loads(tuned.stdout)["exact"] is True
    again = cli("bench", CNN, "--board", "mps2_an386", "--tuning", log, "--number", "1", "--repeat", "1", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["model"] == "small_cnn_float32", again.stderr[-500:]


@pytest.mark.long
@pytest.mark.parametrize("template", ["baremetal", "zephyr"])
def test_create_project_builds_and_equals_onnxruntime(tmp_path, template):
    """A project made from the .onnx file, built and run on mps2_an386 (QEMU), prints ONNX Runtime's bits."""
    x = np.random.default_rng(4).standard_normal((1, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / template
    made = cli(
        "create-project",
        DENSE,
        "--board",
        "mps2_an386",
        "--template",
        template,
        "--input",
        tmp_path / "x.npy",
        "-o",
        out,
    )
    assert made.returncode == 0, made.stderr[-1000:]
    built = cli("build", out, timeout=1200)
    assert built.returncode == 0, built.stderr[-2000:]
    ran = cli("flash", out, "--json")
    assert ran.returncode == 0, ran.stderr[-1000:]
    ours = np.array(json.loads(ran.stdout)["outputs"][0], np.float32)
    assert_same_bits(ours, session(DENSE).run(None, {"input": x})[0], f"{template} project vs ONNX Runtime")
