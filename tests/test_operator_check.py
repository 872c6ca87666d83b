"""Every operator a model needs, in one go: ``compile --check`` and ``analyze`` (issue 27 item 5).

A model with TOPK_V2 and GELU (neither compiled by microcompiler) names both, each with its reason;
a supported model lists its kinds and exits 0; a kernel's refusal of one operator's configuration
(an unsupported tensor type) is listed too; a damaged file stays a damaged-file error.
"""

from __future__ import annotations

import numpy as np
from harness import cli
from model_builder import ModelBuilder, fully_connected_options

TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


def two_missing_operators() -> bytes:
    """FULLY_CONNECTED -> TOPK_V2 ... and GELU: two kinds microcompiler does not compile."""
    b = ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    w = b.constant("w", np.ones((4, 4), np.float32))
    h = b.activation("h", [1, 4], "float32")
    b.op("FULLY_CONNECTED", [x, w], [h], fully_connected_options())
    k = b.constant("k", np.array([2], np.int32))
    values = b.activation("values", [1, 2], "float32")
    where = b.activation("where", [1, 2], "int32")
    b.op("TOPK_V2", [h, k], [values, where])
    g = b.activation("g", [1, 2], "float32")
    b.op("GELU", [values], [g])
    g2 = b.activation("g2", [1, 2], "float32")
    b.op("GELU", [g], [g2])
    return b.finish([x], [g2])


def test_compile_check_names_every_missing_operator_with_its_reason(tmp_path):
    model = tmp_path / "m.tflite"
    model.write_bytes(two_missing_operators())
    r = cli("compile", model, "--check")
    assert r.returncode == 2, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "m.tflite uses 3 operator kinds (4 operators): 2 not supported"
    rows = {line.split()[0]: line for line in lines[1:] if not line.startswith("      ")}
    assert rows["FULLY_CONNECTED"].split()[1:] == ["x1", "supported"]
    assert rows["TOPK_V2"].split()[1:] == ["x1", "NOT", "SUPPORTED"]
    assert rows["GELU"].split()[1:] == ["x2", "NOT", "SUPPORTED"]
    reasons = [line.strip() for line in lines if line.startswith("      ")]
    assert len(reasons) == 2 and "not in TFLite Micro either" in reasons[0]
    assert (
        r.stderr.count("\n") == 1
        and "2 of 3 operator kinds the model uses cannot be compiled (TOPK_V2, GELU)" in r.stderr
    )
    assert [p.name for p in tmp_path.iterdir()] == ["m.tflite"]  # nothing written


def test_analyze_lists_every_missing_operator_not_only_the_first(tmp_path):
    model = tmp_path / "m.tflite"
    model.write_bytes(two_missing_operators())
    r = cli("analyze", model, "--board", "mps2_an386")
    assert r.returncode == 2
    assert "TOPK_V2" in r.stdout and "GELU" in r.stdout and "(TOPK_V2, GELU)" in r.stderr


def test_a_supported_model_lists_its_operators_and_exits_zero():
    r = cli("compile", TINY, "--check")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "tiny_cnn_int8.tflite uses 6 operator kinds (7 operators): all supported"
    assert all(line.rstrip().endswith("supported") and "NOT" not in line for line in r.stdout.splitlines()[1:])


def test_a_kernel_refusing_one_configuration_is_listed_with_its_reason(tmp_path):
    b = ModelBuilder()  # a float32 model whose L2_NORMALIZATION gets an int32 tensor: the kernel refuses it
    x = b.activation("x", [1, 4], "int32")
    y = b.activation("y", [1, 4], "int32")
    b.op("L2_NORMALIZATION", [x], [y])
    model = tmp_path / "m.tflite"
    model.write_bytes(b.finish([x], [y]))
    r = cli("compile", model, "--check")
    assert r.returncode == 2
    assert "L2_NORMALIZATION" in r.stdout and "NOT SUPPORTED" in r.stdout
    assert "operator 0 (L2_NORMALIZATION)" in r.stdout  # the kernel's own reason, under its row


def test_a_damaged_file_is_a_damaged_file_not_a_list(tmp_path):
    model = tmp_path / "m.tflite"
    model.write_bytes(two_missing_operators()[:40])
    r = cli("compile", model, "--check")
    assert r.returncode == 2 and r.stdout == ""
    assert "corrupted" in r.stderr or "truncated" in r.stderr
