"""Identical layer bodies emitted once (codegen/shared_bodies.py): the shared function is named for
what it computes, each layer's function calls it with its own arrays, and the model stays bit-exact
with TFLM (host build under ASan/UBSan, with the DSP kernels' portable emulation)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from harness import assert_matches_oracle
from twin_models import twin_conv_model

from microcompiler.boards import load_board
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.codegen.shared_bodies import REGISTER_ARGUMENTS, share_bodies
from microcompiler.compiler import compile_model
from microcompiler.ops.plan import REFERENCE_PLAN, KernelPlan, Variant


def ops_c(library) -> str:
    return next(text for rel, text in library.files.items() if rel.endswith("_ops.c"))


def function_body(source: str, name: str) -> str:
    m = re.search(rf"^(?:static )?(?:MC_NOINLINE )?void {name}\(.*?\) {{\n(.*?)^}}", source, re.S | re.M)
    assert m, f"no function {name}"
    return m.group(1)


@pytest.mark.parametrize("board", [None, "mps2_an386", "mps3_an547"])
def test_twin_layers_share_one_body_and_stay_exact(tmp_path, board):
    features = load_board(board).cpu.features if board else frozenset()
    library = assert_matches_oracle(
        twin_conv_model(), tmp_path, n_inputs=3, sanitize=True, features=features, patches="off"
    )
    source = ops_c(library)
    shared = re.findall(r"^static void (model_conv_2d_1x1_\w+)\(", source, re.M)
    assert len(shared) == 1, source[:3000]
    for layer, arrays in (("model_twin_a", "model_twin_a_"), ("model_twin_b", "model_twin_b_")):
        body = function_body(source, layer)
        assert body.count("\n") == 1 and body.strip().startswith(f"{shared[0]}(input0, output0, {arrays}")
    assert source.count(f"{shared[0]}(") == 3  # the definition and the two calls


def test_kws_four_pointwise_convolutions_share_one_body(shared_models):
    library = compile_model(
        shared_models / "mlperf_tiny/kws_ref_model.tflite", features=load_board("mps2_an386").cpu.features
    )
    source = ops_c(library)
    name = "kws_ref_model_conv_2d_1x1_im2col_25x5x64_to_25x5x64"
    assert re.search(
        rf"^static void {name}\(const int8_t\* input0, int8_t\* output0, const int32_t\* weights, "
        r"const int32_t\* params\)",
        source,
        re.M,
    )
    for k in range(1, 5):
        assert function_body(source, f"kws_ref_model_conv2d_{k}").strip() == (
            f"{name}(input0, output0, kws_ref_model_conv2d_{k}_weights, kws_ref_model_conv2d_{k}_params);"
        )
    assert "kws_ref_model_conv2d_1_weights" not in function_body(source, name)


class Fn:
    def __init__(self, name, body, arrays, plan=REFERENCE_PLAN):
        self.name, self.body, self.arrays = name, body, arrays
        self.params = [("const int8_t*", "input0", 0), ("int8_t*", "output0", 1)]
        self.op, self.plan = None, plan


def test_bodies_differing_in_more_than_their_arrays_are_not_shared(monkeypatch):
    import microcompiler.codegen.shared_bodies as sb

    monkeypatch.setattr(sb, "describe", lambda graph, op, plan: "layer")
    a = Fn("m_a", "  use(m_a_w, m_a_w, m_a_b, 3);\n", [("m_a_w", "int8_t"), ("m_a_b", "int32_t")])
    b = Fn("m_b", "  use(m_b_w, m_b_w, m_b_b, 3);\n", [("m_b_w", "int8_t"), ("m_b_b", "int32_t")])
    c = Fn("m_c", "  use(m_c_w, m_c_w, m_c_b, 4);\n", [("m_c_w", "int8_t"), ("m_c_b", "int32_t")])
    d = Fn("m_d", "  use(m_d_b, m_d_b, m_d_w, 3);\n", [("m_d_w", "int8_t"), ("m_d_b", "int32_t")])  # types swap
    shared = share_bodies(None, [a, b, c, d], "m")
    assert [s.callers for s in shared] == [["m_a", "m_b"]]
    assert shared[0].body == "  use(w, w, b, 3);\n"
    assert shared[0].params[2:] == [("const int8_t*", "w"), ("const int32_t*", "b")]
    assert a.body == "  m_layer(input0, output0, m_a_w, m_a_b);\n" and c.body.endswith("4);\n")


def test_bodies_needing_more_than_the_argument_registers_or_refused_by_their_variant_are_not_shared(monkeypatch):
    """A fifth parameter would go on the stack (the call no tail call, the layer's frame under the
    body's); a variant whose shared body needs a larger frame says so (Variant.shared_body)."""
    import microcompiler.codegen.shared_bodies as sb

    monkeypatch.setattr(sb, "describe", lambda graph, op, plan: "layer")
    arrays = ("w", "b", "z")
    three = [
        Fn(f"m_{k}", f"  use(m_{k}_w, m_{k}_b, m_{k}_z);\n", [(f"m_{k}_{a}", "int8_t") for a in arrays]) for k in "ab"
    ]
    assert share_bodies(None, three, "m") == []
    assert three[0].body == "  use(m_a_w, m_a_b, m_a_z);\n"
    # two arrays and a model-wide one (EmitContext.model_const, not among the layers' arrays): shared
    two = [
        Fn(f"m_{k}", f"  use(m_{k}_w, m_{k}_b, m_zero_point_row_8);\n", [(f"m_{k}_{a}", "int8_t") for a in "wb"])
        for k in "ab"
    ]
    [shared] = share_bodies(None, two, "m")
    assert shared.body == "  use(w, b, m_zero_point_row_8);\n" and len(shared.params) == REGISTER_ARGUMENTS
    unshareable = KernelPlan(Variant("inline-only", shared_body=False))
    refused = [Fn(f"m_{k}", f"  use(m_{k}_w);\n", [(f"m_{k}_w", "int8_t")], unshareable) for k in "ab"]
    assert share_bodies(None, refused, "m") == []


def test_depthwise_layers_share_one_zero_point_row_and_their_body(shared_models):
    """KWS's four depthwise layers on the M3 tuned to channels4 (the default there is rows) read one
    model-wide row of their input zero point, so their bodies take four parameters (no fifth on the
    stack) and are shared."""
    library = compile_model(
        shared_models / "mlperf_tiny/kws_ref_model.tflite",
        features=load_board("mps2_an385").cpu.features,
        tuning={"DEPTHWISE_CONV_2D": {"variant": "channels4"}},
    )
    source = ops_c(library)
    assert re.findall(r"static const int8_t (\w*zero_point_row\w*)\[", source) == ["kws_ref_model_zero_point_row_64"]
    [name] = re.findall(r"^static void (kws_ref_model_depthwise_conv_2d_3x3_channels4_\w+)\(([^)]*)\)", source, re.M)
    assert name[1].count(",") == REGISTER_ARGUMENTS - 1
    for k in ("", "_1", "_2", "_3"):
        assert (
            function_body(source, f"kws_ref_model_depthwise_conv2d{k}")
            .strip()
            .startswith(f"{name[0]}(input0, output0, ")
        )


def test_metadata_and_the_code_estimate_know_the_shared_bodies(shared_models):
    from microcompiler.project import DEFAULT_STACK_BYTES, estimate_footprint

    meta = compile_model(
        shared_models / "mlperf_tiny/kws_ref_model.tflite", features=load_board("mps2_an386").cpu.features
    ).metadata
    name = "kws_ref_model_conv_2d_1x1_im2col_25x5x64_to_25x5x64"
    assert meta["shared_bodies"] == [{"function": name, "layers": [f"kws_ref_model_conv2d_{k}" for k in range(1, 5)]}]
    assert [op.get("shared_body") for op in meta["operators"] if op["kind"] == "CONV_2D"] == [None] + [name] * 4
    assert meta["weights_bytes"] == meta["params_bytes"]
    info = ModelInfo.from_json(meta)
    assert json.dumps(info.to_json()) == json.dumps(meta)  # the typed records write the same bytes
    assert [op.shared_body for op in info.operators if op.kind == "CONV_2D"] == [None] + [name] * 4
    unshared = dataclasses.replace(info, shared_bodies=[])
    saved = (
        estimate_footprint(unshared, "aot", DEFAULT_STACK_BYTES)["code"]
        - estimate_footprint(info, "aot", DEFAULT_STACK_BYTES)["code"]
    )
    assert 0 < saved < 4 * 1024  # four bodies become one, plus four calls


@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")),
    reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm",
)
def test_kws_on_the_m4_is_exact_and_reports_its_code_and_weights_apart(tmp_path, shared_models):
    """The firmware's model code and weights, measured from the ELF by `run --json`: the weights are
    the library's flash arrays, and the four 1x1 convolutions' code is there once."""
    from harness import cli
    from oracle import Oracle

    from microcompiler.inputs import random_inputs

    model = shared_models / "mlperf_tiny/kws_ref_model.tflite"
    proc = cli("run", model, "--board", "mps2_an386", "--mode", "standalone", "--json", "--keep", tmp_path / "p")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    library = compile_model(model, features=load_board("mps2_an386").cpu.features)
    assert report["model_weights_bytes"] == library.info.params_bytes
    assert 0 < report["model_code_bytes"] < report["flash_bytes"] - report["model_weights_bytes"]
    want = Oracle(model.read_bytes()).run(random_inputs(library.info.inputs))[0]  # what `run` feeds without --input
    assert np.array_equal(np.asarray(report["outputs"][0]).reshape(-1), want.reshape(-1))
    symbols = subprocess.run(
        ["arm-none-eabi-nm", "-S", str(tmp_path / "p" / "build" / "firmware.elf")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "kws_ref_model_conv_2d_1x1_im2col_25x5x64_to_25x5x64" in symbols


def test_kws_depthwise_layers_run_their_channel_runs_in_one_function(shared_models):
    """The "planes" layers of one shape share one function with a case per right shift, the union of
    the shifts they use; each layer passes its runs (ended by a run of no channels) in a tail call."""
    library = compile_model(
        shared_models / "mlperf_tiny/kws_ref_model.tflite", features=load_board("mps2_an386").cpu.features
    )
    source = ops_c(library)
    [name] = re.findall(r"^static MC_NOINLINE void (\w+_planes_\w+)\(", source, re.M)
    body = function_body(source, name)
    cases = [int(c) for c in re.findall(r"^    case (\d+): \{", body, re.M)]
    assert cases == sorted(set(cases)) and len(cases) >= 3
    callers = re.search(rf"called by ([\w, ]+) \*/\nstatic MC_NOINLINE void {name}\(", source).group(1).split(", ")
    assert len(callers) >= 2
    for layer in callers:
        layer_body = function_body(source, layer)
        shifts = [
            int(r) for r in re.findall(r"^      \{\w+(?: \+ \d+)?, \w+(?: \+ \d+)?, \d+, (\d+)\},$", layer_body, re.M)
        ]
        assert shifts and set(shifts) <= set(cases) and "{NULL, NULL, 0, 0}" in layer_body
        assert layer_body.rstrip().endswith(f"{name}(input0, output0, RUNS);")


def test_helpers_merge_their_cases_unless_a_case_differs():
    from microcompiler.ops.base import ParamSink

    sink = ParamSink("m")

    def render(cases):
        return "".join(cases.values())

    a = sink.helper("f", "int x", {5: "five;", 6: "six;"}, render, "cases {cases}", "m_a")
    b = sink.helper("f", "int x", {6: "six;", 7: "seven;"}, render, "cases {cases}", "m_b")
    c = sink.helper("f", "int x", {5: "FIVE;"}, render, "cases {cases}", "m_c")
    assert a == b == "m_f" and c == "m_f_2"
    merged, other = sink.helpers
    assert merged.body == "five;six;seven;" and merged.description == "cases 5, 6, 7"
    assert merged.callers == ["m_a", "m_b"] and other.callers == ["m_c"]


def test_helpers_with_the_same_cases_but_another_body_are_not_merged():
    """Two planes layers of one shape whose output zero points differ have the same case code (it
    names OUTPUT_ZERO_POINT) but not the same enum around it: one function each."""
    from microcompiler.ops.base import ParamSink

    sink = ParamSink("m")

    def head(zero_point):
        return lambda cases: f"enum {{ OUTPUT_ZERO_POINT = {zero_point} }};" + "".join(cases.values())

    a = sink.helper("f", "int x", {5: "five;"}, head(-128), "cases {cases}", "m_a")
    b = sink.helper("f", "int x", {5: "five;"}, head(3), "cases {cases}", "m_b")
    c = sink.helper("f", "int x", {6: "six;"}, head(-128), "cases {cases}", "m_c")
    assert (a, b, c) == ("m_f", "m_f_2", "m_f")
    assert [h.body for h in sink.helpers] == [
        "enum { OUTPUT_ZERO_POINT = -128 };five;six;",
        "enum { OUTPUT_ZERO_POINT = 3 };five;",
    ]
