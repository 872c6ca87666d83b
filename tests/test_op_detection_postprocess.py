"""TFLite_Detection_PostProcess (the custom operator SSD detectors end with) against the TFLM
oracle: a small SSD-style model built here (box regression input, class logits through LOGISTIC,
constant anchors on a grid), fast and regular non-max suppression, with and without a background
class; boxes, scores, classes and the detection count bit for bit TFLM's (the box sizes' double exp is
the runtime's mc_exp, glibc's algorithm; docs/float.md). Malformed custom options give a one-line error."""

import numpy as np
import pytest
from harness import compile_bytes
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection
from oracle import Oracle

from microcompiler.host import HostProgram


def anchors_grid(n):
    """n anchors (y, x, h, w) on a grid in the unit square, two sizes."""
    side = int(np.ceil(np.sqrt(n)))
    cells = [
        ((r + 0.5) / side, (c + 0.5) / side, 0.3 + 0.2 * ((r + c) % 2), 0.25 + 0.1 * (c % 3))
        for r in range(side)
        for c in range(side)
    ]
    return np.array(cells[:n], np.float32)


def options(
    max_detections=5,
    num_classes=3,
    regular=False,
    per_class=None,
    score=0.3,
    iou=0.5,
    classes_per_detection=1,
    scales=(10.0, 10.0, 5.0, 5.0),
    **extra,
):
    o = dict(
        max_detections=max_detections,
        max_classes_per_detection=classes_per_detection,
        nms_score_threshold=score,
        nms_iou_threshold=iou,
        num_classes=num_classes,
        y_scale=scales[0],
        x_scale=scales[1],
        h_scale=scales[2],
        w_scale=scales[3],
        use_regular_nms=regular,
    )
    if per_class is not None:
        o["detections_per_class"] = per_class
    o.update(extra)
    return o


def ssd_model(boxes=12, num_classes=3, background=True, opts=None, encoding_width=4, out_sizes=None) -> bytes:
    """Box encodings [1, boxes*w] reshaped to [1, boxes, w]; class logits through LOGISTIC; anchors constant."""
    opts = opts if opts is not None else options(num_classes=num_classes)
    d = opts.get("max_detections") if isinstance(opts, dict) else None
    d = d if isinstance(d, int) else 5
    b = ModelBuilder()
    with_bg = num_classes + (1 if background else 0)
    raw = b.activation("box_regression", [1, boxes * encoding_width], "float32")
    shape = b.constant("box_shape", np.array([1, boxes, encoding_width], np.int32))
    enc = b.activation("box_encodings", [1, boxes, encoding_width], "float32")
    b.op("RESHAPE", [raw, shape], [enc])
    logits = b.activation("class_logits", [1, boxes, with_bg], "float32")
    scores = b.activation("class_scores", [1, boxes, with_bg], "float32")
    b.op("LOGISTIC", [logits], [scores])
    anchors = b.constant("anchors", anchors_grid(boxes))
    sizes = out_sizes or [[1, d, 4], [1, d], [1, d], [1]]
    outs = [
        b.activation(name, s, "float32")
        for name, s in zip(("detection_boxes", "detection_classes", "detection_scores", "num_detections"), sizes)
    ]
    b.custom_op("TFLite_Detection_PostProcess", [enc, scores, anchors], outs, opts)
    return b.finish([raw, logits], outs)


def inputs_for(boxes, with_bg, seed, encoding_width=4):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(0, 1.5, [1, boxes * encoding_width]).astype(np.float32),
        rng.normal(-4 + seed, 2, [1, boxes, with_bg]).astype(np.float32),
    ]  # more detections as seed grows


def assert_detections_match(model, tmp_path, input_sets, sanitize=False):
    library = compile_bytes(model, tmp_path)
    ours = HostProgram(library, tmp_path / "build", sanitize=sanitize).run(input_sets)
    oracle = Oracle(model)
    counts = []
    for k, inputs in enumerate(input_sets):
        boxes, classes, scores, num = [np.asarray(o).reshape(-1) for o in ours[k].outputs]
        t_boxes, t_classes, t_scores, t_num = [np.asarray(o).reshape(-1) for o in oracle.run(inputs)]
        n = int(t_num[0])
        assert num[0] == n, f"input set {k}: {num[0]} detections, TFLM {n}"
        np.testing.assert_array_equal(classes[:n], t_classes[:n], err_msg=f"input set {k}: classes")
        np.testing.assert_array_equal(
            scores[:n].view(np.uint32), t_scores[:n].view(np.uint32), f"input set {k}: scores"
        )
        np.testing.assert_array_equal(
            boxes[: 4 * n].view(np.uint32), t_boxes[: 4 * n].view(np.uint32), f"input set {k}: boxes"
        )
        # past the detections: zeros (TFLM's regular path writes zeros, its fast path leaves them)
        assert not boxes[4 * n :].any() and not classes[n:].any() and not scores[n:].any()
        counts.append(n)
    return counts


@pytest.mark.parametrize("regular", [False, True], ids=["fast_nms", "regular_nms"])
def test_ssd_post_processing_matches_tflm(tmp_path, regular):
    """12 anchors, 3 classes after a background column; several random input sets (ASan/UBSan)."""
    model = ssd_model(12, 3, opts=options(regular=regular, per_class=3 if regular else None))
    counts = assert_detections_match(model, tmp_path, [inputs_for(12, 4, s) for s in range(6)], sanitize=True)
    assert max(counts) > 1 and min(counts) < 5, counts  # the cases exercise suppression and the limit


@pytest.mark.parametrize("regular", [False, True], ids=["fast_nms", "regular_nms"])
def test_post_processing_variants_match_tflm(tmp_path, regular):
    """No background class, wider encodings (stride 6), one class, other thresholds and scales."""
    cases = [
        (
            ssd_model(
                20,
                2,
                background=False,
                encoding_width=6,
                opts=options(max_detections=7, num_classes=2, regular=regular, score=0.2, iou=0.35),
            ),
            20,
            2,
            6,
        ),
        (
            ssd_model(
                9,
                1,
                opts=options(
                    max_detections=4,
                    num_classes=1,
                    regular=regular,
                    score=0.5,
                    iou=0.6,
                    scales=(8.0, 8.0, 4.0, 4.0),
                    classes_per_detection=3,
                ),
            ),
            9,
            2,
            4,
        ),
    ]
    for n, (model, boxes, with_bg, width) in enumerate(cases):
        assert_detections_match(model, tmp_path / f"case{n}", [inputs_for(boxes, with_bg, s, width) for s in range(4)])


def test_post_processing_with_default_detections_per_class(tmp_path):
    """Regular NMS without detections_per_class (TFLM's default 100) and ties in the scores."""
    model = ssd_model(8, 2, opts=options(max_detections=6, num_classes=2, regular=True, score=0.1))
    tied = inputs_for(8, 3, 0)
    tied[1][0, :, 1] = 1.0  # every box scores the same for class 0
    assert_detections_match(model, tmp_path, [tied, inputs_for(8, 3, 1)])


@pytest.mark.parametrize(
    "opts,match",
    [
        (options(max_detections="five"), "custom option 'max_detections' is str"),
        ({k: v for k, v in options().items() if k != "num_classes"}, "custom option 'num_classes' is missing"),
        (b"\x01\x02\x03", "not a flexbuffer map"),
        (options(iou=1.5), "nms_iou_threshold 1.5 must lie in (0, 1]"),
        (options(num_classes=5), "num_classes 5 must be the 4 score columns"),
        (options(classes_per_detection=2), "max_classes_per_detection 2 with 3 classes is not supported yet"),
        (options(scales=(10.0, 0.0, 5.0, 5.0)), "must be finite and non-zero"),
    ],
)
def test_malformed_options_give_one_line_error(tmp_path, opts, match):
    assert_clean_rejection(ssd_model(opts=opts), tmp_path, match)


def test_output_shape_must_hold_max_detections(tmp_path):
    model = ssd_model(out_sizes=[[1, 4, 4], [1, 5], [1, 5], [1]])
    assert_clean_rejection(model, tmp_path, "output 0 of shape [1, 4, 4] must hold 20 values")
