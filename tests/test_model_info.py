"""metadata.json is written from a typed, versioned record and read back into it (codegen/model_info.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

import microcompiler
from microcompiler.codegen.model_info import FORMAT_VERSION, MemoryPeak, ModelInfo, ModelInfoError, OperatorInfo
from microcompiler.compiler import compile_model, write_atomically

MODEL = "examples/tiny_cnn/tiny_cnn_int8.tflite"
WHILE_MODEL = "examples/control_flow/while_int8.tflite"  # subgraphs with their own operator records


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
    assert info.details["generator"] == "microcompiler" and info.memory_peak.bytes == data["memory_peak"]["bytes"]


@pytest.fixture(scope="module")
def written_while(tmp_path_factory):
    out = tmp_path_factory.mktemp("lib") / "while"
    write_atomically(compile_model(WHILE_MODEL), out)
    return out / "metadata.json"


def written_again(path) -> str:
    return json.dumps(ModelInfo.load(path).to_json(), indent=2) + "\n"


def test_the_record_round_trips_to_the_same_bytes(written, written_while):
    for path in (written, written_while):
        assert written_again(path) == path.read_text(), path


def test_the_operators_subgraphs_and_peak_are_typed_records(written, written_while):
    data, info = json.loads(written.read_text()), ModelInfo.load(written)
    assert all(isinstance(op, OperatorInfo) for op in info.operators) and len(info.operators) == len(data["operators"])
    for op, record in zip(info.operators, data["operators"]):
        assert (op.index, op.kind, op.function, op.layer, op.layer_name) == (
            record["index"],
            record["kind"],
            record["function"],
            record["layer"],
            record["layer_name"],
        )
        assert [list(s) for s in op.inputs] == record["inputs"] and [list(s) for s in op.outputs] == record["outputs"]
        assert (op.macs, op.weights_bytes, dict(op.kernel)) == (
            record["macs"],
            record["weights_bytes"],
            record["kernel"],
        )
        assert op.variant == record["kernel"]["variant"] and op.name == record["layer_name"]
    assert isinstance(info.memory_peak, MemoryPeak) and info.memory_peak.to_json() == data["memory_peak"]
    looped, sub_data = ModelInfo.load(written_while), json.loads(written_while.read_text())["subgraphs"][-1]
    (while_op,) = looped.operators
    body = looped.subgraph(sub_data["index"])
    assert while_op.kind == "WHILE" and body.operators and all(op.dtype is not None for op in body.operators)
    assert [op.dtype for op in body.operators] == [op["dtype"] for op in sub_data["operators"]]
    assert all(op.layer is None and op.weights_bytes is None for op in body.operators)


def test_the_records_are_frozen(written):
    op = ModelInfo.load(written).operators[0]
    with pytest.raises(AttributeError):
        op.macs = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        op.kernel["variant"] = "reference"  # type: ignore[index]


def test_a_library_written_before_the_version_field_still_loads(written):
    data = json.loads(written.read_text())
    del data["format_version"], data["microcompiler_version"]
    info = ModelInfo.from_json(data)
    assert info.format_version == 1 and info.microcompiler_version == "" and info.total_macs == data["total_macs"]
    assert [op.to_json() for op in info.operators] == data["operators"]


def test_a_library_written_before_the_newer_records_still_loads(written_while):
    """The layout of the first libraries: no version, memory peak, shared bodies, layer short names or
    per-operator weights, and subgraph operators without shapes, kernel or type."""
    data = json.loads(written_while.read_text())
    for key in ("format_version", "microcompiler_version", "memory_peak", "shared_bodies", "generator", "files"):
        del data[key]
    for op in data["operators"]:
        del op["layer_name"], op["weights_bytes"]
    for sub in data["subgraphs"]:
        sub["operators"] = [{k: op[k] for k in ("index", "kind", "function", "macs")} for op in sub["operators"]]
    info = ModelInfo.from_json(data)
    assert info.memory_peak is None and info.shared_bodies == [] and info.operators[0].layer_name is None
    assert info.operators[0].name == data["operators"][0]["layer"] and info.operators[0].weights_bytes is None
    sub_op = info.subgraphs[-1].operators[0]
    assert sub_op.inputs == () and sub_op.variant == "reference" and sub_op.dtype is None
    assert info.to_json()["operators"] == data["operators"]  # absent fields stay absent


DAMAGED_OPERATORS = [
    (lambda d: d["operators"][0].pop("kind"), 'operator 0 has no "kind"'),
    (lambda d: d["operators"][0].update(macs="12"), 'operator 0: "macs" is not a whole number'),
    (lambda d: d["operators"][0].update(macs=True), 'operator 0: "macs" is not a whole number'),
    (lambda d: d["operators"][1].update(inputs="1x8x8x1"), 'operator 1: "inputs" is not a list of shapes'),
    (lambda d: d["operators"][0].update(kernel="im2col"), 'operator 0: "kernel" is not a kernel record'),
    (lambda d: d["operators"][0].update(layer_name=7), 'operator 0: "layer_name" is not text'),
    (lambda d: d["operators"].__setitem__(0, [1, 2]), "operator 0 is not a JSON object"),
    (lambda d: d.update(operators={"0": {}}), '"operators" is not a list'),
    (lambda d: d["memory_peak"].update(bytes=-1), 'the memory peak: "bytes" is not a whole number'),
    (lambda d: d.update(shared_bodies=[{"function": "f", "layers": "g"}]), 'a shared body: "layers" is not a list'),
]


@pytest.mark.parametrize("edit, message", DAMAGED_OPERATORS)
def test_a_damaged_record_is_refused_in_one_line_naming_it(written, edit, message):
    data = json.loads(written.read_text())
    edit(data)
    with pytest.raises(ModelInfoError, match=re.escape(f"m/metadata.json is damaged ({message}")) as err:
        ModelInfo.from_json(data, "m/metadata.json")
    assert "\n" not in str(err.value) and str(err.value).endswith("; compile the model again")


def test_a_damaged_subgraph_operator_is_refused_naming_it(written_while):
    data = json.loads(written_while.read_text())
    sub = data["subgraphs"][-1]
    sub["operators"][0]["outputs"] = [[1, "x"]]
    with pytest.raises(
        ModelInfoError, match=re.escape(f'subgraph {sub["index"]}, operator 0: "outputs" is not a list')
    ):
        ModelInfo.from_json(data)


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


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = tmp_path_factory.mktemp("project") / "p"
    made = cli("create-project", MODEL, "--board", "mps2_an385", "-o", str(project))
    assert made.returncode == 0, made.stderr
    return project


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(format_version=FORMAT_VERSION + 1), "newer microcompiler"),
        (
            lambda d: d["operators"][0].update(outputs=None),
            'is damaged (operator 0: "outputs" is not a list of shapes)',
        ),
        (lambda d: d["operators"][-1].pop("macs"), 'has no "macs"); recreate the project'),
    ],
)
def test_a_project_with_a_newer_or_damaged_library_is_refused_by_the_cli(tmp_path, project, edit, message):
    copy = tmp_path / "p"
    shutil.copytree(project, copy)
    metas = sorted(copy.rglob("metadata.json"))
    assert metas
    data = json.loads(metas[0].read_text())
    edit(data)
    metas[0].write_text(json.dumps(data))
    run = cli("build", str(copy))
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
