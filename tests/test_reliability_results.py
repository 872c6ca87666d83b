"""Never print a result we cannot stand behind (docs/reliability.md).

Non-finite floats travel bit-exactly (kernels, weights, inputs baked into firmware), a model whose
output is its input gives the input back, a device running another model's firmware is refused,
and timeouts are finite positive numbers that bound every run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import model_builder as mb
import numpy as np
import pytest
from harness import FLOAT_RTOL, compile_bytes
from oracle import Oracle

from microcompiler.host import HostProgram

NAN_BITS = 0x7FC00000
NON_FINITE = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0, -2.25, np.float32(3e38), -1.0], dtype=np.float32)


def cli(*args, cwd=None, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def assert_one_line_error(proc, *fragments):
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("microcompiler: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def assert_ends_with_one_line_error(proc, *fragments):
    """Progress lines may come first (commands that build firmware log to stderr); the error is one line."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("microcompiler: error: ")]
    assert len(errors) == 1 and proc.stderr.strip().splitlines()[-1] == errors[0], proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def assert_same_floats(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """NaN where TFLM has NaN, infinities exactly, finite values within FLOAT_RTOL.

    (The sign of a NaN made by an invalid operation, inf * 0, is the CPU's choice: x86 and Arm differ.)"""
    got, want = got.reshape(-1), want.reshape(-1)
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN positions differ: ours {got}, TFLM {want}"
    inf = np.isinf(want)
    assert np.array_equal(got[inf], want[inf]) and not np.isinf(got[~inf]).any(), (
        f"{what}: infinities differ: ours {got}, TFLM {want}"
    )
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=FLOAT_RTOL, atol=1e-6, err_msg=what)


def run_host_and_oracle(model: bytes, inputs, tmp_path, sanitize=False):
    library = compile_bytes(model, tmp_path)
    ours = HostProgram(library, tmp_path / "build", sanitize=sanitize).run([inputs])[0].outputs
    want = Oracle(model).run(inputs)
    return library, ours, want


# ---- float kernels let NaN and infinities through as TFLM does ---------------------------------------


def _unary(kind, options=None, shape=(1, 2, 2, 2), out_shape=None, extra=()):
    def build(b, x):
        inputs = [x, *[b.constant(n, v) for n, v in extra]]
        y = b.activation("y", list(out_shape or shape), "float32")
        b.op(kind, inputs, [y], options)
        return y

    return build


def _binary(kind, options):
    def build(b, x):
        k = b.constant("k", np.array([1.0, -1.0, 0.5, 2.0, np.inf, 0.0, -3.0, 1.0], np.float32).reshape(1, 2, 2, 2))
        y = b.activation("y", [1, 2, 2, 2], "float32")
        b.op(kind, [x, k], [y], options)
        return y

    return build


def _conv(b, x):
    w = b.constant("w", np.arange(2 * 1 * 1 * 2, dtype=np.float32).reshape(2, 1, 1, 2) - 1.5)
    bias = b.constant("bias", np.array([0.25, -0.5], np.float32))
    y = b.activation("y", [1, 2, 2, 2], "float32")
    b.op("CONV_2D", [x, w, bias], [y], mb.conv2d_options(activation="NONE"))
    return y


def _depthwise(b, x):
    w = b.constant("w", np.array([0.5, -1.0], np.float32).reshape(1, 1, 1, 2))
    bias = b.constant("bias", np.array([0.0, 1.0], np.float32))
    y = b.activation("y", [1, 2, 2, 2], "float32")
    b.op("DEPTHWISE_CONV_2D", [x, w, bias], [y], mb.depthwise_options(activation="RELU"))
    return y


def _fully_connected(b, x):
    w = b.constant("w", np.eye(8, dtype=np.float32)[:3])
    y = b.activation("y", [1, 3], "float32")
    b.op("FULLY_CONNECTED", [x, w, -1], [y], mb.fully_connected_options())
    return y


FLOAT_KERNELS = {
    "add_none": _binary("ADD", mb.add_options("NONE")),
    "mul_relu6": _binary("MUL", mb.mul_options("RELU6")),
    "conv_2d": _conv,
    "depthwise_relu": _depthwise,
    "fully_connected": _fully_connected,
    "max_pool": _unary("MAX_POOL_2D", mb.pool_options((2, 2), (1, 1), "VALID"), out_shape=(1, 1, 1, 2)),
    "avg_pool": _unary("AVERAGE_POOL_2D", mb.pool_options((2, 2), (1, 1), "VALID", "RELU"), out_shape=(1, 1, 1, 2)),
    "relu": _unary("RELU"),
    "relu6": _unary("RELU6"),
    "logistic": _unary("LOGISTIC"),
    "softmax": _unary("SOFTMAX", mb.softmax_options(1.0)),
    "mean": _unary(
        "MEAN", mb.reducer_options(True), out_shape=(1, 1, 1, 2), extra=[("axis", np.array([1, 2], np.int32))]
    ),
}


@pytest.mark.parametrize("kernel", sorted(FLOAT_KERNELS))
def test_float_kernels_keep_nan_and_infinities_like_tflm(tmp_path, kernel):
    b = mb.ModelBuilder()
    shape = [1, 8] if kernel == "fully_connected" else [1, 2, 2, 2]
    x = b.activation("x", shape, "float32")
    y = FLOAT_KERNELS[kernel](b, x)
    model = b.finish([x], [y])
    for k, values in enumerate([NON_FINITE, np.roll(NON_FINITE, 3), np.full(8, np.nan, np.float32)]):
        inputs = [values.reshape(shape)]
        _, ours, want = run_host_and_oracle(model, inputs, tmp_path / str(k), sanitize=kernel == "add_none")
        assert_same_floats(ours[0], want[0], f"{kernel}, input {values}")


def test_nan_input_through_the_cli_prints_nan(tmp_path):
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    k = b.constant("k", np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))
    y = b.activation("y", [1, 4], "float32")
    b.op("ADD", [x, k], [y], mb.add_options())
    (tmp_path / "m.tflite").write_bytes(b.finish([x], [y]))
    np.save(tmp_path / "x.npy", np.array([[np.nan, np.inf, -np.inf, 1.0]], np.float32))
    proc = cli("run", tmp_path / "m.tflite", "--input", tmp_path / "x.npy", "--json")
    assert proc.returncode == 0, proc.stderr
    out = np.array(json.loads(proc.stdout)["outputs"][0], dtype=np.float32)
    want = Oracle((tmp_path / "m.tflite").read_bytes()).run([np.load(tmp_path / "x.npy")])[0]
    assert_same_floats(out, want, "ADD through the CLI")
    assert np.isnan(out[0, 0])


# ---- non-finite constants: emitted by bit pattern, exact --------------------------------------------


def _weights_model(values: np.ndarray) -> bytes:
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    k = b.constant("k", values.reshape(1, 4))
    y = b.activation("y", [1, 4], "float32")
    b.op("MUL", [x, k], [y], mb.mul_options())
    return b.finish([x], [y])


def test_nan_and_infinite_weights_compile_and_match_tflm(tmp_path):
    weights = np.array([np.nan, np.inf, -np.inf, 0.75], np.float32)
    model = _weights_model(weights)
    x = [np.array([[1.0, 2.0, -3.0, 4.0]], np.float32)]
    library, ours, want = run_host_and_oracle(model, x, tmp_path, sanitize=True)
    assert_same_floats(ours[0], want[0], "MUL by non-finite weights")
    ops_c = next(text for path, text in library.files.items() if path.endswith("_ops.c"))
    code = re.sub(r"/\*.*?\*/", "", ops_c, flags=re.S)  # the C without its comments
    assert not re.search(r"\b(nan|inf)", code, re.IGNORECASE), "a non-finite value written as a literal"
    assert "0x7fc00000u, 0x7f800000u, 0xff800000u" in ops_c


def test_finite_constants_stay_readable_literals(tmp_path):
    library = compile_bytes(_weights_model(np.array([0.5, -2.0, 0.25, 3.0], np.float32)), tmp_path)
    ops_c = next(text for path, text in library.files.items() if path.endswith("_ops.c"))
    assert re.search(r"0\.5f,\s*-2\.0f,\s*0\.25f,\s*3\.0f", ops_c)
    assert "_bits" not in ops_c and "mc_f32_from_bits" not in ops_c


@pytest.mark.skipif(
    not all(__import__("shutil").which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")),
    reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm",
)
def test_non_finite_inputs_and_weights_on_a_board(tmp_path):
    """Baked into the firmware by bit pattern: NaN compiles, infinities stay infinities (not FLT_MAX)."""
    model = _weights_model(np.array([np.nan, np.inf, -np.inf, 0.75], np.float32))
    (tmp_path / "m.tflite").write_bytes(model)
    x = np.array([[2.0, np.inf, np.nan, -np.inf]], np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = cli(
        "run",
        tmp_path / "m.tflite",
        "--board",
        "mps2_an386",
        "--input",
        tmp_path / "x.npy",
        "--json",
        "--keep",
        tmp_path / "fw",
    )
    assert proc.returncode == 0, proc.stderr
    got = np.array(json.loads(proc.stdout.strip().splitlines()[-1])["outputs"][0], np.float32)
    assert_same_floats(got, Oracle(model).run([x])[0], "MUL on mps2_an386")
    main_c = (tmp_path / "fw" / "src" / "main.c").read_text()
    assert "0x40000000u, 0x7f800000u, 0x7fc00000u, 0xff800000u" in main_c


def test_c_float_round_trips_every_special_value():
    from microcompiler.codegen.c_arrays import c_initializer
    from microcompiler.ops.quant import c_float

    assert c_float(0.5) == "0.5f"
    assert c_float(float("inf")) == "mc_f32_from_bits(0x7f800000u)"
    assert c_float(float("-inf")) == "mc_f32_from_bits(0xff800000u)"
    assert c_float(float("nan")) == "mc_f32_from_bits(0x7fc00000u)"
    assert c_float(np.float32(np.finfo(np.float32).max)) == "FLT_MAX"
    payload = np.array([0x7FA00001], np.uint32).view(np.float32)
    assert c_initializer(payload).replace(" ", "").replace("\n", "") == "{{0x7fa00001u}}"


# ---- a model whose output tensor is its input tensor -------------------------------------------------


def identity_model(dtype="int8") -> bytes:
    b = mb.ModelBuilder()
    kw = dict(scale=0.5, zero_point=1) if dtype == "int8" else {}
    x = b.activation("x", [1, 5], dtype, **kw)
    return b.finish([x], [x])


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_output_that_is_the_input_gives_the_input_back_on_the_host(tmp_path, dtype):
    model = identity_model(dtype)
    values = (
        np.array([[-7, 3, 0, 127, -128]]).astype(np.int8)
        if dtype == "int8"
        else np.array([[1.5, np.nan, -np.inf, 0.0, 2.0]], np.float32)
    )
    library = compile_bytes(model, tmp_path)
    for executor in ("aot", "graph"):
        ours = HostProgram(library, tmp_path / executor, executor=executor).run([[values]])[0].outputs[0]
        assert np.array_equal(
            bits(ours) if dtype == "float32" else ours, bits(values) if dtype == "float32" else values
        ), (executor, ours)
    assert np.array_equal(Oracle(model).run([values])[0], values, equal_nan=dtype == "float32")


def test_output_that_is_the_input_through_the_cli(tmp_path):
    (tmp_path / "m.tflite").write_bytes(identity_model())
    np.save(tmp_path / "x.npy", np.array([[-7, 3, 0, 127, -128]], np.int8))
    proc = cli("run", tmp_path / "m.tflite", "--input", tmp_path / "x.npy", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["outputs"] == [[[-7, 3, 0, 127, -128]]]


def test_an_output_listed_twice_is_written_twice(tmp_path):
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    k = b.constant("k", np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))
    y = b.activation("y", [1, 4], "float32")
    b.op("ADD", [x, k], [y], mb.add_options())
    model = b.finish([x], [y, y])
    inputs = [np.array([[0.5, -1.0, 2.0, np.nan]], np.float32)]
    library = compile_bytes(model, tmp_path)
    want = Oracle(model).run(inputs)
    for executor in ("aot", "graph"):
        ours = HostProgram(library, tmp_path / executor, executor=executor).run([inputs])[0].outputs
        assert len(ours) == 2
        for got, exp in zip(ours, want):
            assert_same_floats(got, exp, f"{executor}: duplicated output")


def test_a_constant_output_is_refused_in_one_line(tmp_path):
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    k = b.constant("k", np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))
    y = b.activation("y", [1, 4], "float32")
    b.op("ADD", [x, k], [y], mb.add_options())
    (tmp_path / "m.tflite").write_bytes(b.finish([x], [y, k]))
    assert_one_line_error(cli("run", tmp_path / "m.tflite"), "constant")


# ---- the RPC handshake names the compiled model: another model's firmware is refused -----------------


def fc_model(seed: int) -> bytes:
    """The same graph, names and shapes for every seed; only the weights differ."""
    rng = np.random.default_rng(seed)
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 8], "int8", scale=0.05, zero_point=-3)
    w = b.constant("w", rng.integers(-127, 128, (4, 8), dtype=np.int8), scale=[0.02], zero_point=[0])
    y = b.activation("y", [1, 4], "int8", scale=0.1, zero_point=2)
    b.op("FULLY_CONNECTED", [x, w, -1], [y], mb.fully_connected_options())
    return b.finish([x], [y])


def test_the_fingerprint_is_in_the_header_and_changes_with_one_weight(tmp_path):
    a1 = compile_bytes(fc_model(1), tmp_path / "a1", name="m")
    a2 = compile_bytes(fc_model(1), tmp_path / "a2", name="m")
    b = compile_bytes(fc_model(2), tmp_path / "b", name="m")
    fingerprint = a1.metadata["fingerprint"]
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint)
    assert f"#define M_FINGERPRINT UINT64_C(0x{fingerprint})" in a1.files["include/m.h"]
    assert a2.metadata["fingerprint"] == fingerprint  # deterministic
    assert b.metadata["fingerprint"] != fingerprint
    assert [f["function"] for f in b.metadata["operators"]] == [f["function"] for f in a1.metadata["operators"]]


def test_a_host_rpc_server_of_another_model_is_refused(tmp_path):
    from microcompiler.api import connect
    from microcompiler.errors import DeviceError
    from microcompiler.rpc import ModelPlan
    from microcompiler.rpc.host_project import create_host_project

    mine = compile_bytes(fc_model(1), tmp_path / "mine", name="m")
    other = compile_bytes(fc_model(2), tmp_path / "other", name="m")
    server_dir = create_host_project(mine, tmp_path / "server")
    with connect(server_dir) as session:  # its own model: fine
        assert session.device.model_fingerprint == int(mine.metadata["fingerprint"], 16)
        x = np.arange(8, dtype=np.int8).reshape(1, 8)
        with session.executor() as ex:
            got = ex(x)[0]
    assert np.array_equal(got, Oracle(fc_model(1)).run([x])[0])
    with pytest.raises(
        DeviceError,
        match=f"another model .*fingerprint {mine.metadata['fingerprint']}.*{other.metadata['fingerprint']}",
    ):
        connect(server_dir, plan=ModelPlan.from_library(other))


@pytest.mark.skipif(
    not all(__import__("shutil").which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")),
    reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm",
)
def test_port_to_a_board_running_another_models_firmware_is_refused(tmp_path):
    """The issue's case: --port to a device flashed with a model of the same name and operator names."""
    from microcompiler.boards import load_board
    from microcompiler.project import build, create_project
    from microcompiler.transport.qemu import QemuTransport

    board = load_board("mps2_an386")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "m.tflite").write_bytes(fc_model(1))
    (tmp_path / "b" / "m.tflite").write_bytes(fc_model(2))
    create_project(tmp_path / "a" / "m.tflite", "baremetal", board, tmp_path / "fw", mode="host-driven")
    build(tmp_path / "fw", log=lambda _: None)
    with QemuTransport.for_board(board, tmp_path / "fw" / "build" / "firmware.elf") as device:
        port = device._link().port
        proc = cli(
            "run",
            tmp_path / "b" / "m.tflite",
            "--board",
            board.name,
            "--mode",
            "host-driven",
            "--port",
            port,
            "--rpc-timeout",
            "5",
        )
        assert_ends_with_one_line_error(proc, "another model")
        proc = cli(
            "run",
            tmp_path / "a" / "m.tflite",
            "--board",
            board.name,
            "--mode",
            "host-driven",
            "--port",
            port,
            "--rpc-timeout",
            "5",
            "--json",
            "--input",
            _save(tmp_path, "x.npy"),
        )
    assert proc.returncode == 0, proc.stderr
    want = Oracle(fc_model(1)).run([np.load(tmp_path / "x.npy")])[0]
    assert json.loads(proc.stdout)["outputs"] == [want.tolist()]


def _save(tmp_path, name):
    np.save(tmp_path / name, np.arange(-4, 4, dtype=np.int8).reshape(1, 8))
    return tmp_path / name
