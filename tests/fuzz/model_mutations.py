"""Mutated .tflite models: the compiler must compile them or raise a MicrocompilerError, nothing else.

A mutation is stored as data, not as a model copy: the seed model's name and a list of edits
``{"at": offset, "delete": n, "insert": "hex"}`` applied in order (a bit flip is delete 1, insert the
flipped byte). Seeds are every shared model (``../shared/models``) and a few small built models
(``built:<name>``). ``tests/data/fuzz_corpus/*.json`` keeps every mutant that once escaped with a
Python exception; tests/test_errors.py replays them.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
SHARED_MODELS = TESTS.parents[1] / "shared" / "models"
CORPUS_DIR = TESTS / "data" / "fuzz_corpus"
KINDS = ("flip1", "flip2", "flipN", "set", "splice", "insert", "delete", "truncate")


def _built_models() -> dict[str, bytes]:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import model_builder as mb

    rng = np.random.default_rng(0)
    models = {}

    b = mb.ModelBuilder()  # int8 fully connected with a per-tensor weight scale and a bias
    x = b.activation("x", [1, 8], "int8", scale=0.05, zero_point=-3)
    w = b.constant("w", rng.integers(-127, 128, (4, 8), dtype=np.int8), scale=[0.02], zero_point=[0])
    bias = b.constant("bias", rng.integers(-500, 500, 4).astype(np.int32), scale=[0.001], zero_point=[0])
    y = b.activation("y", [1, 4], "int8", scale=0.1, zero_point=2)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], mb.fully_connected_options())
    models["built:fc_int8"] = b.finish([x], [y])

    b = mb.ModelBuilder()  # float conv + add
    x = b.activation("x", [1, 4, 4, 2], "float32")
    w = b.constant("w", rng.standard_normal((3, 3, 3, 2)).astype(np.float32))
    bias = b.constant("bias", rng.standard_normal(3).astype(np.float32))
    c = b.activation("c", [1, 4, 4, 3], "float32")
    b.op("CONV_2D", [x, w, bias], [c], mb.conv2d_options(activation="RELU"))
    k = b.constant("k", rng.standard_normal((1, 4, 4, 3)).astype(np.float32))
    y = b.activation("y", [1, 4, 4, 3], "float32")
    b.op("ADD", [c, k], [y], mb.add_options())
    models["built:conv_add_float"] = b.finish([x], [y])

    b = mb.ModelBuilder()  # int16 softmax after a mean
    x = b.activation("x", [1, 4, 6], "int16", scale=1 / 2048, zero_point=0)
    axis = b.constant("axis", np.array([1], dtype=np.int32))
    m = b.activation("m", [1, 1, 6], "int16", scale=1 / 2048, zero_point=0)
    b.op("MEAN", [x, axis], [m], mb.reducer_options(True))
    y = b.activation("y", [1, 1, 6], "int16", scale=1 / 32768, zero_point=0)
    b.op("SOFTMAX", [m], [y], mb.softmax_options(1.0))
    models["built:mean_softmax_int16"] = b.finish([x], [y])

    b = mb.ModelBuilder()  # int8 depthwise conv (per-channel) + average pool
    x = b.activation("x", [1, 6, 6, 4], "int8", scale=0.05, zero_point=1)
    w = b.constant(
        "w",
        rng.integers(-127, 128, (1, 3, 3, 4), dtype=np.int8),
        scale=[0.01, 0.02, 0.03, 0.04],
        zero_point=[0] * 4,
        axis=3,
    )
    bias = b.constant("bias", rng.integers(-300, 300, 4).astype(np.int32), scale=[0.0005] * 4, zero_point=[0] * 4)
    c = b.activation("c", [1, 6, 6, 4], "int8", scale=0.08, zero_point=-2)
    b.op("DEPTHWISE_CONV_2D", [x, w, bias], [c], mb.depthwise_options(activation="RELU6"))
    y = b.activation("y", [1, 3, 3, 4], "int8", scale=0.08, zero_point=-2)
    b.op("AVERAGE_POOL_2D", [c], [y], mb.pool_options())
    models["built:dw_pool_int8"] = b.finish([x], [y])

    b = mb.ModelBuilder()  # float concatenation of two inputs, then RELU
    x1 = b.activation("x1", [1, 3, 2], "float32")
    x2 = b.activation("x2", [1, 3, 5], "float32")
    c = b.activation("c", [1, 3, 7], "float32")
    b.op("CONCATENATION", [x1, x2], [c], mb.concatenation_options(2))
    y = b.activation("y", [1, 3, 7], "float32")
    b.op("RELU", [c], [y])
    models["built:concat_relu_float"] = b.finish([x1, x2], [y])
    return models


_CACHE: dict[str, bytes] = {}


def seed_names() -> list[str]:
    shared = sorted(p.relative_to(SHARED_MODELS).as_posix() for p in SHARED_MODELS.rglob("*.tflite"))
    return shared + sorted(_built_models())


def op_seed_names() -> list[str]:
    """The single-operator seeds of tests/fuzz/op_seeds.py (``op:<kind>_<dtype>``)."""
    if not any(n.startswith("op:") for n in _CACHE):
        if str(Path(__file__).parent) not in sys.path:
            sys.path.insert(0, str(Path(__file__).parent))
        from op_seeds import op_seeds

        _CACHE.update(op_seeds())
    return sorted(n for n in _CACHE if n.startswith("op:"))


def seed_bytes(name: str) -> bytes:
    if name not in _CACHE:
        if name.startswith("built:"):
            _CACHE.update(_built_models())
        elif name.startswith("op:"):
            op_seed_names()
        else:
            _CACHE[name] = (SHARED_MODELS / name).read_bytes()
    return _CACHE[name]


def apply_edits(data: bytes, edits: list[dict]) -> bytes:
    buf = bytearray(data)
    for e in edits:
        at = min(e["at"], len(buf))
        buf[at : at + e["delete"]] = bytes.fromhex(e["insert"])
    return bytes(buf)


def random_edits(rng: random.Random, size: int) -> tuple[str, list[dict]]:
    """One mutation of a model of ``size`` bytes: (kind, edits). Offsets index the current bytes."""
    kind = rng.choice(KINDS)
    edits: list[dict] = []
    if size == 0:
        return kind, [{"at": 0, "delete": 0, "insert": "00"}]

    def flip(count: int) -> list[dict]:
        # the new byte value is filled in by materialize(), which knows the byte being flipped
        return [{"at": rng.randrange(size), "flip": 1 << rng.randrange(8)} for _ in range(count)]

    if kind == "flip1":
        edits = flip(1)
    elif kind == "flip2":
        edits = flip(2)
    elif kind == "flipN":
        edits = flip(rng.randint(3, 16))
    elif kind == "set":
        edits = [
            {"at": rng.randrange(size), "delete": 1, "insert": f"{rng.randrange(256):02x}"}
            for _ in range(rng.randint(1, 4))
        ]
    elif kind == "splice":  # copy a run of the model's own bytes over another place
        length = rng.randint(1, 64)
        src, dst = rng.randrange(size), rng.randrange(size)
        edits = [{"at": dst, "delete": length, "copy_from": src, "copy_len": length}]
    elif kind == "insert":
        edits = [{"at": rng.randrange(size), "delete": 0, "insert": rng.randbytes(rng.randint(1, 16)).hex()}]
    elif kind == "delete":
        edits = [{"at": rng.randrange(size), "delete": rng.randint(1, 64), "insert": ""}]
    else:
        edits = [{"at": rng.randrange(size), "delete": size, "insert": ""}]
    return kind, edits


def materialize(data: bytes, edits: list[dict]) -> list[dict]:
    """Turn flips and copies into plain {at, delete, insert} edits against ``data``."""
    out = []
    buf = bytearray(data)
    for e in edits:
        if "flip" in e:
            at = e["at"] % max(1, len(buf))
            e = {"at": at, "delete": 1, "insert": f"{buf[at] ^ e['flip']:02x}"}
        elif "copy_from" in e:
            piece = bytes(buf[e["copy_from"] : e["copy_from"] + e["copy_len"]])
            e = {"at": e["at"], "delete": len(piece), "insert": piece.hex()}
        out.append(e)
        at = min(e["at"], len(buf))
        buf[at : at + e["delete"]] = bytes.fromhex(e["insert"])
    return out


def corpus_cases() -> list[tuple[str, dict]]:
    return [(p.name, json.loads(p.read_text())) for p in sorted(CORPUS_DIR.glob("*.json"))]
