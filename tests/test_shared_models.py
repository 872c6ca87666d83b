"""Every shared peer model compiles and matches the TFLM oracle on 50 seeded inputs.

int8/int16 outputs must be bit-exact; float32 within 1e-5 relative. The arena must not exceed
TFLM's activation plan (figures from ../shared/baselines/README.md).
"""

import pytest
from harness import assert_matches_oracle

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.inputs import random_inputs

N_INPUTS = 50
MODELS = [
    "mlperf_tiny/kws_ref_model.tflite",
    "mlperf_tiny/pretrainedResnet_quant.tflite",
    "mlperf_tiny/pretrainedResnet.tflite",
    "mlperf_tiny/ad01_int8.tflite",
    "tflm/hello_world_int8.tflite",
    "tflm/hello_world_float.tflite",
    "tflm/seanet/conv0.tflite",
    "tflm/seanet/conv1.tflite",
    "tflm/seanet/conv2.tflite",
    "tflm/seanet/conv3.tflite",
]
# TFLM's activation plan (bytes), ../shared/baselines/README.md.
TFLM_ACTIVATION_PLAN = {
    "mlperf_tiny/kws_ref_model.tflite": 16_000,
    "mlperf_tiny/pretrainedResnet_quant.tflite": 49_152,
    "mlperf_tiny/ad01_int8.tflite": 768,
}


@pytest.mark.parametrize("model", MODELS)
def test_shared_model_matches_tflm_on_50_inputs(shared_models, tmp_path, model):
    model_bytes = (shared_models / model).read_bytes()
    library = assert_matches_oracle(model_bytes, tmp_path, n_inputs=N_INPUTS)
    meta = library.metadata
    assert meta["params_bytes"] > 0
    assert meta["total_macs"] > 0
    assert all(op["macs"] >= 0 for op in meta["operators"])


@pytest.mark.parametrize("model", ["mlperf_tiny/kws_ref_model.tflite", "mlperf_tiny/ad01_int8.tflite"])
def test_shared_model_graph_executor_under_sanitizers(shared_models, tmp_path, model):
    """The graph executor path, built with ASan+UBSan, on a few inputs."""
    assert_matches_oracle((shared_models / model).read_bytes(), tmp_path, n_inputs=3, sanitize=True, executor="graph")


@pytest.mark.parametrize("model", MODELS[:6])
def test_shared_model_aot_under_sanitizers(shared_models, tmp_path, model):
    assert_matches_oracle((shared_models / model).read_bytes(), tmp_path, n_inputs=2, sanitize=True)


@pytest.mark.parametrize("model,tflm_plan", sorted(TFLM_ACTIVATION_PLAN.items()))
def test_arena_not_larger_than_tflm_plan(shared_models, tmp_path, model, tflm_plan):
    from harness import compile_bytes

    meta = compile_bytes((shared_models / model).read_bytes(), tmp_path).metadata
    assert meta["arena_bytes"] <= tflm_plan, (meta["arena_bytes"], tflm_plan)


def test_random_inputs_are_seeded_and_cover_the_range():
    meta = [TensorInfo("x", "x", (1, 1000), "int8", 1000)]
    a, b = random_inputs(meta, seed=3)[0], random_inputs(meta, seed=3)[0]
    assert (a == b).all()
    assert a.min() == -128 and a.max() == 127
