"""The shared SEANet int16 CONV_2D layers: bit-exact with TFLM and with the recorded golden outputs."""

from pathlib import Path

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes

from microcompiler.host import HostProgram


def read_csv(path: Path) -> np.ndarray:
    """One line of comma-separated int16 values, row-major."""
    return np.array([int(v) for v in path.read_text().replace("\n", ",").split(",") if v.strip()], np.int16)


@pytest.mark.parametrize("n", range(4))
def test_seanet_conv_matches_tflm_and_golden(tmp_path, shared_models, n):
    folder = shared_models / "tflm" / "seanet"
    model = (folder / f"conv{n}.tflite").read_bytes()
    x = read_csv(folder / f"conv{n}_input0_int16.csv")
    golden = read_csv(folder / f"conv{n}_golden_int16.csv")
    rng = np.random.default_rng(n)
    shape = model_input_shape(tmp_path / "probe", model)
    assert x.size == np.prod(shape)
    x = x.reshape(shape)
    random = [rng.integers(-32768, 32767, shape, endpoint=True, dtype=np.int16) for _ in range(2)]
    lib = assert_matches_oracle(model, tmp_path, inputs=[[x]] + [[r] for r in random])
    assert [op["kind"] for op in lib.metadata["operators"]] == ["CONV_2D"]
    got = HostProgram(lib, tmp_path / "golden").run([[x]])[0].outputs[0]
    assert golden.size == got.size
    np.testing.assert_array_equal(got.reshape(-1), golden)


def model_input_shape(tmp_path, model: bytes) -> list[int]:
    (inp,) = compile_bytes(model, tmp_path).metadata["inputs"]
    return inp["shape"]
