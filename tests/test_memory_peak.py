"""metadata.json "memory_peak": the largest live set, the operator where it sits, and its tensors."""

from __future__ import annotations

from conftest import SHARED_MODELS

from microcompiler.commands.output import peak_line
from microcompiler.compiler import compile_model
from microcompiler.frontend.tflite import load_tflite
from microcompiler.passes import PIPELINE
from microcompiler.passes.memory_plan import arena_buffers, lower_bound, peak_step

KWS = SHARED_MODELS / "mlperf_tiny/kws_ref_model.tflite"
TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


def test_kws_peak_is_the_arena_at_the_first_depthwise_convolution():
    peak = compile_model(KWS).metadata["memory_peak"]
    assert peak["bytes"] == peak["arena_bytes"] == 16_000
    assert (peak["step"], peak["operator"], peak["kind"], peak["layer_name"]) == (
        1,
        1,
        "DEPTHWISE_CONV_2D",
        "depthwise_conv2d",
    )
    # its input (conv2d's output) and its own output, 25x5x64 int8 each, side by side
    assert [(t["layer_name"], t["bytes"], t["offset"]) for t in peak["tensors"]] == [
        ("conv2d", 8000, 0),
        ("depthwise_conv2d", 8000, 8000),
    ]
    assert peak_line(peak).startswith("RAM peak: 16,000 B live at operator 1 DEPTHWISE_CONV_2D (depthwise_conv2d)")


def test_peak_matches_the_live_bytes_of_every_step():
    graph = load_tflite(TINY)
    for p in PIPELINE:
        graph = p(graph)
    buffers = arena_buffers(graph)
    steps = len(graph.operators)
    live = [sum(b.size for b in buffers if b.first <= s <= b.last) for s in range(steps)]
    step, at_peak = peak_step(buffers, steps)
    assert step == live.index(max(live)) and sum(b.size for b in at_peak) == lower_bound(buffers, steps)
    assert all(b.first <= step <= b.last for b in at_peak)
    peak = compile_model(TINY).metadata["memory_peak"]
    assert peak["step"] == step and peak["bytes"] == max(live) <= peak["arena_bytes"]
    assert sorted(t["bytes"] for t in peak["tensors"]) == sorted(b.size for b in at_peak)


def test_a_graph_without_arena_buffers_has_no_peak_step():
    assert peak_step([], 3) == (-1, [])
