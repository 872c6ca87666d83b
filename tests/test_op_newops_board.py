"""The signal operators, TFLite_Detection_PostProcess (regular NMS, whose every output TFLM writes)
and EMBEDDING_LOOKUP on an emulated Cortex-M4 board (mps2_an386, QEMU): one merged model, run
standalone once and compared with TFLM (integers bit-exact, floats within 1e-5)."""
import numpy as np

from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from model_merge import merge_models
from test_op_detection_postprocess import inputs_for, options, ssd_model
from test_op_embedding_lookup import CASES, id_inputs, lookup_model
from test_op_signal import side_by_side_model


@needs_board_tools
def test_new_operators_on_board_match_tflm(tmp_path):
    signal_model, make_signal_inputs = side_by_side_model()
    detection = ssd_model(12, 3, opts=options(regular=True, per_class=3))
    model = merge_models([signal_model, detection, lookup_model(CASES)])
    inputs = make_signal_inputs(0) + inputs_for(12, 4, 3) + id_inputs(CASES, 0)
    run = assert_matches_oracle_on_board(model, tmp_path, inputs=inputs)
    assert len(run.outputs) == 10 + 4 + len(CASES)
    assert float(np.asarray(run.outputs[10 + 3]).ravel()[0]) > 0  # some detections survived
