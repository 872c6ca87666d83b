"""metadata.json is written from a typed, versioned record and read back into it (codegen/model_info.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import microcompiler
from microcompiler.codegen.model_info import FORMAT_VERSION, ModelInfo, ModelInfoError
from microcompiler.compiler import compile_model, write_atomically

MODEL = "examples/tiny_cnn/tiny_cnn_int8.tflite"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("lib") / "tiny"
    write_atomically(compile_model(MODEL), out)
    return out / "metadata.json"


def test_metadata_json_carries_its_format_and_the_compiler_version(written):
    data = json.loads(written.read_text())
    assert data["format_version"] == FORMAT_VERSION and data["microcompiler_version"] == microcompiler.__version__
    info = ModelInfo.load(written)
    assert info.name == data["name"] and info.inputs[0].shape == tuple(data["inputs"][0]["shape"])
    assert info.inputs[0].zero_point == data["inputs"][0]["zero_point"] and info.arena_bytes == data["arena_bytes"]
    assert info.details["generator"] == "microcompiler" and "memory_peak" in info.details


def test_the_record_round_trips(written):
    data = json.loads(written.read_text())
    assert ModelInfo.from_json(data).to_json() == data


def test_a_library_written_before_the_version_field_still_loads(written):
    data = json.loads(written.read_text())
    del data["format_version"], data["microcompiler_version"]
    info = ModelInfo.from_json(data)
    assert info.format_version == 1 and info.microcompiler_version == "" and info.total_macs == data["total_macs"]


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(format_version=FORMAT_VERSION + 1), "written by a newer microcompiler"),
        (lambda d: d.update(format_version="1"), "is damaged (format_version"),
        (lambda d: d.pop("inputs"), "is damaged (not a model library's metadata: inputs"),
        (lambda d: d["outputs"][0].pop("dtype"), "an input or output lacks"),
        (lambda d: d.update(arena_bytes=-1), "not a whole number"),
    ],
)
def test_a_damaged_or_newer_file_is_refused_in_one_line(written, edit, message):
    data = json.loads(written.read_text())
    edit(data)
    with pytest.raises(ModelInfoError, match=re.escape(message)) as err:
        ModelInfo.from_json(data, "m/metadata.json")
    assert "\n" not in str(err.value) and str(err.value).endswith(("compile the model again", "with this version"))


def test_a_project_with_a_newer_library_is_refused_by_the_cli(tmp_path):
    project = tmp_path / "p"
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "create-project",
            MODEL,
            "--board",
            "mps2_an385",
            "-o",
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    metas = sorted(project.rglob("metadata.json"))
    assert metas
    data = json.loads(metas[0].read_text())
    data["format_version"] = FORMAT_VERSION + 1
    metas[0].write_text(json.dumps(data))
    run = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "build", str(project)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 2 and "newer microcompiler" in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
