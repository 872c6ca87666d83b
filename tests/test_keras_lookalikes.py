"""The Keras look-alike models (tests/models/keras, made by scripts/keras_lookalikes.py with the real
TFLite converter): each compiles and matches the TFLM oracle on the host, int8 bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import assert_matches_oracle

KERAS = Path(__file__).resolve().parent / "models" / "keras"
# scripts/keras_lookalikes.py's models (the *_unrolled ones of scripts/keras_unrolled.py have their own tests)
NAMES = {
    "efficientnet_b0_block",
    "mobilenet_v3_small",
    "unet",
    "transformer_block",
    "lstm",
    "gru",
    "conv_autoencoder",
    "ds_cnn",
}
MODELS = sorted(p.name for p in KERAS.glob("*.tflite") if p.name.rsplit("_", 1)[0] in NAMES)


def test_the_set_is_complete():
    assert {m.rsplit("_", 1)[0] for m in MODELS} == NAMES


@pytest.mark.parametrize("name", MODELS)
def test_keras_lookalike_matches_tflm(tmp_path, name):
    assert_matches_oracle((KERAS / name).read_bytes(), tmp_path, n_inputs=2)
