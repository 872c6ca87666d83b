"""``TFLite_Detection_PostProcess``: the custom operator SSD detectors end with, as TFLM's
detection_postprocess.cc.

Inputs: box encodings [1, boxes, >= 4] (y, x, h, w relative to the anchor), class scores
[1, boxes, classes (+1 background)] and anchors [boxes, 4] (y, x, h, w), all float32 (TFLM runs no
other type). Outputs: detection boxes [max_detections, 4] (ymin, xmin, ymax, xmax), classes, scores
and the number of detections, all float32. Boxes are decoded in double precision as TFLM does (its
double ``exp`` as ``mc_exp``, the host C library's algorithm carried in the runtime, kernel_libm.h);
non-max suppression keeps, best score first (ties in box order), boxes scoring at least
``nms_score_threshold`` that overlap no better box by more than ``nms_iou_threshold``.

Two paths, as TFLM: the fast one (default) suppresses on each box's best class; the regular one
(``use_regular_nms``) suppresses per class (at most ``detections_per_class`` each) and keeps the
``max_detections`` best over all classes. Output rows past the number of detections are zero
(TFLM's fast path leaves them as they were). TFLM fails the inference on boxes whose corners are
out of order (impossible for finite inputs); the generated code cannot fail and goes on.
Working arrays (decoded boxes, candidate indices) live in the shared kernel scratch as int32; the
decoded boxes are copied in and out with memcpy, so no float is read through an int32 lvalue.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops import custom_options as opt
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.plan import KernelPlan, Variant
from microcompiler.ops.quant import c_float

REGULAR_NMS, FAST_NMS = Variant("regular_nms"), Variant("fast_nms")  # the two suppressions

_COORDS = 4  # y, x, h, w (and ymin, xmin, ymax, xmax once decoded)
_DEFAULT_DETECTIONS_PER_CLASS = 100  # TFLM's kNumDetectionsPerClass


def _params(op) -> dict:
    """The custom options TFLM reads, checked and typed."""
    p = dict(
        max_detections=opt.integer(op, "max_detections"),
        num_classes=opt.integer(op, "num_classes"),
        regular=bool(opt.integer(op, "use_regular_nms", 0)),
        per_class=opt.integer(op, "detections_per_class", _DEFAULT_DETECTIONS_PER_CLASS),
        score_threshold=float(np.float32(opt.number(op, "nms_score_threshold"))),
        iou_threshold=float(np.float32(opt.number(op, "nms_iou_threshold"))),
        scales=[float(np.float32(opt.number(op, f"{k}_scale"))) for k in "yxhw"],
    )
    if not p["regular"]:
        p["classes_per_detection"] = opt.integer(op, "max_classes_per_detection")
    return p


def _geometry(op, graph, p):
    """(boxes, encoding stride, classes with background, label offset) after checking the shapes."""
    enc, scores, anchors = (graph.tensors[i] for i in op.inputs)
    require(
        len(enc.shape) == 3 and enc.shape[0] == 1 and enc.shape[2] >= _COORDS,
        op,
        f"box encodings of shape {list(enc.shape)} must be [1, boxes, 4 or more]",
    )
    boxes = int(enc.shape[1])
    require(
        len(scores.shape) == 3 and list(scores.shape[:2]) == [1, boxes],
        op,
        f"class scores of shape {list(scores.shape)} must be [1, {boxes}, classes]",
    )
    require(
        list(anchors.shape) == [boxes, _COORDS],
        op,
        f"anchors of shape {list(anchors.shape)} must be [{boxes}, {_COORDS}]",
    )
    with_background = int(scores.shape[2])
    offset = with_background - p["num_classes"]
    require(
        offset in (0, 1),
        op,
        f"num_classes {p['num_classes']} must be the {with_background} score columns, "
        "or one fewer (a background class first)",
    )
    d = p["max_detections"]
    want = {0: _COORDS * d, 1: d, 2: d, 3: 1}
    for k, size in want.items():
        t = graph.tensors[op.outputs[k]]
        require(t.size == size, op, f"output {k} of shape {list(t.shape)} must hold {size} values (max_detections {d})")
    return boxes, int(enc.shape[2]), with_background, offset


@register
class DetectionPostProcess(OpKernel):
    kinds = ("TFLite_Detection_PostProcess",)
    input_roles = ("box_encodings", "class_scores", "anchors")
    inputs = (3, 3)
    outputs = (4, 4)
    types = ("float32",)
    type_notes = (
        "box encodings, scores, anchors and outputs float32 (as TFLM); fast NMS with one class per "
        "detection, or regular NMS"
    )
    options = (
        "custom (flexbuffer): max_detections, max_classes_per_detection (1), detections_per_class, "
        "use_regular_nms, nms_score_threshold, nms_iou_threshold, num_classes, y/x/h/w_scale"
    )

    def check(self, op, graph):
        p = _params(op)
        for i in list(op.inputs) + list(op.outputs):
            t = graph.tensors[i]
            require(
                t.dtype == "float32", op, f"tensor '{t.name}' of type {t.dtype} is not supported (float32, as TFLM)"
            )
        require(p["max_detections"] >= 1, op, f"max_detections {p['max_detections']} must be at least 1")
        require(p["num_classes"] >= 1, op, f"num_classes {p['num_classes']} must be at least 1")
        require(
            0.0 < p["iou_threshold"] <= 1.0,
            op,
            f"nms_iou_threshold {p['iou_threshold']} must lie in (0, 1] (TFLM fails every inference otherwise)",
        )
        require(
            all(s != 0.0 and np.isfinite(s) for s in p["scales"]),
            op,
            f"box scales {p['scales']} (y, x, h, w) must be finite and non-zero",
        )
        if p["regular"]:
            require(p["per_class"] >= 1, op, f"detections_per_class {p['per_class']} must be at least 1")
        else:
            k = min(p["classes_per_detection"], p["num_classes"])
            require(
                p["classes_per_detection"] >= 1,
                op,
                f"max_classes_per_detection {p['classes_per_detection']} must be at least 1",
            )
            require(
                k == 1,
                op,
                f"max_classes_per_detection {p['classes_per_detection']} with {p['num_classes']} "
                "classes is not supported yet (only one class per detection, as SSD detectors use)",
            )
        _geometry(op, graph, p)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(REGULAR_NMS if _params(op)["regular"] else FAST_NMS)

    def emit(self, op, graph, ctx):
        p = _params(op)
        boxes, stride, with_background, offset = _geometry(op, graph, p)
        d = p["max_detections"]
        words = 8 * boxes + (d + boxes if p["regular"] else 0)  # int32 words of working arrays
        return ctx.render(
            "detection_postprocess.c.j2",
            encodings=ctx.arg(op.inputs[0]),
            scores=ctx.arg(op.inputs[1]),
            anchors=ctx.arg(op.inputs[2]),
            out=[ctx.arg(o) for o in op.outputs],
            scratch=ctx.scratch(4 * words),
            boxes=boxes,
            stride=stride,
            with_background=with_background,
            offset=offset,
            classes=p["num_classes"],
            max_detections=d,
            per_class=min(p["per_class"], boxes),
            regular=p["regular"],
            score_threshold=c_float(p["score_threshold"]),
            iou_threshold=c_float(p["iou_threshold"]),
            scales=[c_float(s) for s in p["scales"]],
        )
