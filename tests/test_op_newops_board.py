"""The signal operators (side by side, and chained into an audio front end: window, FFT auto
scale, real FFT, energy, filter bank, square root, PCAN, log), the inverse FFT,
TFLite_Detection_PostProcess (regular NMS, whose every output TFLM writes) and EMBEDDING_LOOKUP on
an emulated Cortex-M4 board (mps2_an386, QEMU): one merged model, run standalone once and compared
with TFLM (integers bit-exact, floats within 1e-5)."""

import numpy as np
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from model_merge import merge_models
from signal_models import front_end_inputs, front_end_model
from test_op_detection_postprocess import inputs_for, options, ssd_model
from test_op_embedding_lookup import CASES, id_inputs, lookup_model
from test_op_signal import side_by_side_model
from test_op_signal_fft import IRFFT_CASES, frames, rfft_model


@needs_board_tools
def test_new_operators_on_board_match_tflm(tmp_path):
    signal_model, make_signal_inputs = side_by_side_model()
    parts = [  # (model, its inputs)
        (signal_model, make_signal_inputs(0)),
        (front_end_model(), front_end_inputs(1)),
        (rfft_model(IRFFT_CASES, inverse=True), frames(IRFFT_CASES, 0)),
        (ssd_model(12, 3, opts=options(regular=True, per_class=3)), inputs_for(12, 4, 3)),
        (lookup_model(CASES), id_inputs(CASES, 0)),
    ]
    model = merge_models([m for m, _ in parts])
    run = assert_matches_oracle_on_board(model, tmp_path, inputs=[x for _, xs in parts for x in xs])
    num_detections = run.outputs[-len(CASES) - 1]
    assert float(np.asarray(num_detections).ravel()[0]) > 0  # some detections survived
