"""TFLM's stateless signal operators (custom operators of audio front ends) against the TFLM
oracle, bit-exact: SignalWindow, SignalEnergy, SignalFftAutoScale, SignalFilterBank,
SignalFilterBankSquareRoot, SignalFilterBankLog and SignalPCAN, side by side in one model under
ASan/UBSan, a chained front end, and malformed options."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection, run_ours
from oracle import Oracle
from signal_models import (
    CHANNELS,
    SPECTRUM_BINS,
    add_filter_bank,
    add_log,
    add_pcan,
    add_square_root,
    front_end_inputs,
    front_end_model,
)


def side_by_side_model():
    """Each operator on its own model input; returns (model, a function making input sets)."""
    b = ModelBuilder()
    makers, inputs, outputs = [], [], []

    def new_input(name, shape, dtype, make):
        t = b.activation(name, shape, dtype)
        inputs.append(t)
        makers.append(make)
        return t

    for n, (frames, length, shift) in enumerate([(3, 16, 14), (1, 10, 0), (2, 8, 31)]):
        x = new_input(
            f"frames{n}",
            [frames, length],
            "int16",
            lambda r, s=(frames, length): r.integers(-32768, 32768, s).astype(np.int16),
        )
        w = b.constant(f"window{n}", np.random.default_rng(n).integers(0, 32768, length).astype(np.int16))
        y = b.activation(f"windowed{n}", [frames, length], "int16")
        b.custom_op("SignalWindow", [x, w], [y], {"shift": shift})
        outputs.append(y)
    spectrum = new_input(
        "spectrum",
        [2 * SPECTRUM_BINS],
        "int16",
        lambda r: r.choice(np.array([-32768, 32767, 0, -5, 1234], np.int16), 2 * SPECTRUM_BINS),
    )
    energy = b.activation("energy", [SPECTRUM_BINS], "uint32")
    b.custom_op("SignalEnergy", [spectrum], [energy], {"start_index": 0, "end_index": SPECTRUM_BINS})
    outputs.append(energy)
    frame = new_input(
        "fft_frame", [40], "int16", lambda r: (r.integers(-32768, 32768, 40) >> r.integers(0, 16)).astype(np.int16)
    )
    scaled, bits = b.activation("scaled", [40], "int16"), b.activation("scale_bits", [], "int32")
    b.custom_op("SignalFftAutoScale", [frame], [scaled, bits])
    outputs += [scaled, bits]
    bank_in = new_input(
        "bank_energy",
        [SPECTRUM_BINS],
        "uint32",
        lambda r: r.integers(0, 1 << 32, SPECTRUM_BINS, dtype=np.uint64).astype(np.uint32),
    )
    outputs.append(add_filter_bank(b, bank_in, prefix="fb_"))
    root_in = new_input(
        "root_in",
        [CHANNELS],
        "uint64",
        lambda r: np.concatenate(
            [r.integers(0, 1 << 32, 3, dtype=np.uint64), r.integers(0, 1 << 63, 3, dtype=np.uint64) << 1]
        ),
    )
    outputs.append(add_square_root(b, root_in, prefix="sqrt_"))
    log_in = new_input(
        "log_in",
        [CHANNELS],
        "uint32",
        lambda r: np.concatenate([[0, 1, 2], r.integers(3, 1 << 32, CHANNELS - 3, dtype=np.uint64)]).astype(np.uint32),
    )
    outputs.append(add_log(b, log_in, prefix="log_", bits=2, scale=1 << 20))
    pcan_in = new_input("pcan_in", [CHANNELS], "uint32", lambda r: r.integers(0, 1 << 20, CHANNELS).astype(np.uint32))
    noise = new_input(
        "noise",
        [CHANNELS],
        "uint32",
        lambda r: np.concatenate([[0, 2], r.integers(3, 1 << 32, CHANNELS - 2, dtype=np.uint64)]).astype(np.uint32),
    )
    outputs.append(add_pcan(b, pcan_in, noise, prefix="pcan_"))
    model = b.finish(inputs, outputs)
    return model, lambda seed: [m(np.random.default_rng(seed * 31 + k)) for k, m in enumerate(makers)]


def test_signal_operators_match_tflm_under_sanitizers(tmp_path):
    model, make = side_by_side_model()
    lib = assert_matches_oracle(model, tmp_path, inputs=[make(s) for s in range(4)], sanitize=True)
    kinds = {op["kind"] for op in lib.metadata["operators"]}
    assert kinds == {
        "SignalWindow",
        "SignalEnergy",
        "SignalFftAutoScale",
        "SignalFilterBank",
        "SignalFilterBankSquareRoot",
        "SignalFilterBankLog",
        "SignalPCAN",
    }, kinds


@pytest.mark.parametrize("executor", ["aot", "graph"])
def test_front_end_chain_matches_tflm(tmp_path, executor):
    """Audio frame to log features (window, auto scale, FFT, energy, filter bank, square root, PCAN,
    log), with both executors."""
    assert_matches_oracle(
        front_end_model(), tmp_path, inputs=[front_end_inputs(s) for s in range(4)], executor=executor
    )


def test_energy_of_a_bin_range(tmp_path):
    """Bins [3, 20) of 33 as TFLM; the others zero (TFLM leaves them unwritten)."""
    b = ModelBuilder()
    x = b.activation("spectrum", [66], "int16")
    y = b.activation("energy", [SPECTRUM_BINS], "uint32")
    b.custom_op("SignalEnergy", [x], [y], {"start_index": 3, "end_index": 20})
    model = b.finish([x], [y])
    spectrum = np.random.default_rng(5).integers(-32768, 32768, 66).astype(np.int16)
    _, outs = run_ours(model, tmp_path, inputs=[[spectrum]])
    want = Oracle(model).run([spectrum])[0]
    np.testing.assert_array_equal(outs[0][0][3:20], want[3:20])
    assert not outs[0][0][:3].any() and not outs[0][0][20:].any()


def window_model(options, window_len=8, frames_len=16, window_dtype="int16"):
    b = ModelBuilder()
    x = b.activation("x", [frames_len], "int16")
    w = b.constant("w", np.ones(window_len, window_dtype))
    y = b.activation("y", [frames_len], "int16")
    b.custom_op("SignalWindow", [x, w], [y], options)
    return b.finish([x], [y])


def filter_bank_model(options=None, const_config=True):
    b = ModelBuilder()
    x = b.activation("energy", [SPECTRUM_BINS], "uint32")
    if const_config:
        y = add_filter_bank(b, x, options=options)
        return b.finish([x], [y])
    w = b.activation("weights", [4], "int16")
    rest = [b.constant(f"c{k}", np.zeros(CHANNELS + 1, np.int16)) for k in range(4)]
    y = b.activation("y", [CHANNELS], "uint64")
    b.custom_op("SignalFilterBank", [x, w] + rest, [y], {"num_channels": CHANNELS})
    return b.finish([x, w], [y])


@pytest.mark.parametrize(
    "model,match",
    [
        (window_model({}), "custom options [] differ from the expected ['shift']"),
        (window_model({"shift": 3, "scale": 1}), "differ from the expected ['shift']"),
        (window_model({"shift": "12"}), "custom option 'shift' is str"),
        (window_model({"shift": 40}), "shift 40 must lie in [0, 31]"),
        (window_model({"shift": 12}, window_len=5), "not whole frames of the 5-value window"),
        (window_model({"shift": 12}, window_dtype="int32"), "TFLM runs only int16 here"),
        (window_model(b"\xff\x00\x01"), "not a flexbuffer map"),
        (filter_bank_model({"num_channels": 9}), "num_channels 9 must be at least 1 and the output's 6 values"),
        (filter_bank_model(const_config=False), "computed at run time is not supported yet"),
    ],
)
def test_malformed_signal_operators_give_one_line_error(tmp_path, model, match):
    assert_clean_rejection(model, tmp_path, match)


@pytest.mark.parametrize(
    "name,stands",
    [
        ("ETHOSU", "TFLite Micro runs this custom operator; it is on microcompiler's roadmap"),
        ("MyAudioOp", "this custom operator is not in TFLite Micro either"),
    ],
)
def test_other_custom_operators_are_refused_with_where_they_stand(tmp_path, name, stands):
    b = ModelBuilder()
    x, y = b.activation("x", [8], "int16"), b.activation("y", [8], "int16")
    b.custom_op(name, [x], [y], {"frame_size": 8})
    err = assert_clean_rejection(b.finish([x], [y]), tmp_path, f"unsupported operator CUSTOM ('{name}')")
    assert stands in err
