"""Error metrics between the device's outputs and a reference's, per model output over all samples.

Per output: the share of elements that are exactly equal, the largest and mean absolute error,
the cosine similarity (the mean over samples, and the smallest), and for a classifier (a 1-D
output, or 2-D with a leading batch of 1, with more than one class) how often both pick the same
top-1 class. Integer outputs compared with TFLite Micro must be exact; float outputs (a float
model, or ours dequantized against the float model) are judged within FLOAT_TOLERANCE.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from microcompiler.codegen.model_info import TensorInfo

# A float output passes when |ours - reference| <= FLOAT_TOLERANCE * max(1, max |reference|).
FLOAT_TOLERANCE = 1e-4


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def is_classifier(shape: Sequence[int]) -> bool:
    """A vector of class scores: 1-D, or [1, classes], with more than one class."""
    core = [int(d) for d in shape]
    while len(core) > 1 and core[0] == 1:
        core = core[1:]
    return len(core) == 1 and core[0] > 1


def within_tolerance(ours: np.ndarray, reference: np.ndarray) -> bool:
    ref = reference.astype(np.float64)
    bound = FLOAT_TOLERANCE * max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
    return bool(np.all(np.abs(ours.astype(np.float64) - ref) <= bound))


def ulp_distance(ours: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Per element, how many float32 steps (ulp) lie between ours and the reference: 0 only for the
    same bits (+0 and -0 count as 1 apart), two NaNs 0."""
    a, b = np.asarray(ours, np.float32), np.asarray(reference, np.float32)
    bits_a = np.ascontiguousarray(a).view(np.int32).astype(np.int64)
    bits_b = np.ascontiguousarray(b).view(np.int32).astype(np.int64)

    def ordered(bits: np.ndarray) -> np.ndarray:  # float order as integer order: negative floats count down from 0
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    distance = np.abs(ordered(bits_a) - ordered(bits_b))
    distance = np.where((distance == 0) & (bits_a != bits_b), 1, distance)
    return np.where(np.isnan(a) & np.isnan(b), 0, distance)


def output_metrics(name: str, ours: list[np.ndarray], reference: list[np.ndarray], exact: bool) -> dict:
    """Metrics of one output over all samples. exact: integers that must match bit for bit.
    "bit_exact": every element of every sample has the reference's bits; float32 outputs also give
    "max_ulp_error", the largest distance in float32 steps (ulp)."""
    a = np.stack([np.asarray(x, dtype=np.float64).ravel() for x in ours])
    b = np.stack([np.asarray(x, dtype=np.float64).ravel() for x in reference])
    diff = np.abs(a - b)
    cosines = [cosine_similarity(x, y) for x, y in zip(a, b)]
    row = {
        "name": name,
        "samples": len(a),
        "elements": int(a.size),
        "exact_match_rate": float(np.mean(a == b)) if a.size else 1.0,
        "exact_samples": int(sum(np.array_equal(x, y) for x, y in zip(a, b))),
        "max_abs_error": float(diff.max()) if diff.size else 0.0,
        "mean_abs_error": float(diff.mean()) if diff.size else 0.0,
        "rmse": float(np.sqrt(np.mean(diff**2))) if diff.size else 0.0,
        "cosine_similarity": float(np.mean(cosines)),
        "min_cosine_similarity": float(np.min(cosines)),
        "top1_agreement": None,
    }
    floats = all(np.asarray(x).dtype == np.float32 for x in list(ours) + list(reference))
    if floats:
        ulps = [ulp_distance(np.asarray(x).ravel(), np.asarray(y).ravel()) for x, y in zip(ours, reference)]
        row["max_ulp_error"] = int(max((int(u.max()) for u in ulps if u.size), default=0))
        row["bit_exact"] = row["max_ulp_error"] == 0
    else:
        row["bit_exact"] = row["exact_samples"] == row["samples"]
    if is_classifier(np.shape(ours[0])):
        row["top1_agreement"] = float(np.mean([np.argmax(x) == np.argmax(y) for x, y in zip(a, b)]))
    if exact:
        row["passed"] = row["exact_samples"] == row["samples"]
    else:
        row["passed"] = all(within_tolerance(x, y) for x, y in zip(a, b))
    return row


def dequantize(array: np.ndarray, meta: TensorInfo) -> np.ndarray:
    """A model tensor's real values (metadata's scale and zero point; floats are returned as they are)."""
    if np.issubdtype(array.dtype, np.floating) or meta.scale is None or meta.zero_point is None:
        return array.astype(np.float32)
    return ((array.astype(np.float64) - meta.zero_point) * meta.scale).astype(np.float32)


def label_metrics(scores: list[np.ndarray], labels: np.ndarray) -> dict:
    """Top-1 accuracy of class scores against labels, with the confusion matrix (rows: label, columns:
    predicted class) and each class's recall."""
    predicted = np.array([int(np.argmax(np.asarray(x).ravel())) for x in scores])
    classes = int(max(int(labels.max()), int(predicted.max())) + 1) if len(labels) else 0
    confusion = np.zeros((classes, classes), dtype=np.int64)
    for label, guess in zip(labels, predicted):
        confusion[int(label), int(guess)] += 1
    totals = confusion.sum(axis=1)
    return {
        "samples": int(len(labels)),
        "accuracy": float(np.mean(predicted == labels)) if len(labels) else 0.0,
        "correct": int(np.sum(predicted == labels)),
        "confusion": confusion.tolist(),
        "recall_per_class": [None if t == 0 else float(confusion[c, c] / t) for c, t in enumerate(totals)],
    }
