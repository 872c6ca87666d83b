"""MLPerf Tiny benchmarks: what each one sends the device and how the firmware answers.

The project template ``mlperf`` (project_templates/mlperf/) makes a firmware whose main() is the
EEMBC DUT protocol (crt/src/mlperf_dut.c); this module checks a model against a benchmark and
gives the template its values. Running the official runner: microcompiler.mlperf_runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from microcompiler.codegen.model_info import ModelInfo, TensorInfo
from microcompiler.errors import MicrocompilerError


@dataclass(frozen=True)
class Benchmark:
    name: str  # the runner's model name (m-model-[...])
    task: str
    input_format: str  # the C enum value of mc_mlperf_input_format_t
    load_bytes: int  # what one `db load` carries
    load_description: str
    scores: str = "MC_MLPERF_SCORES_OUTPUT"

    @property
    def input_dtype(self) -> np.dtype:
        """The dtype of the bytes the runner loads."""
        formats: dict[str, np.dtype] = {
            "MC_MLPERF_INPUT_INT8": np.dtype(np.int8),
            "MC_MLPERF_INPUT_UINT8": np.dtype(np.uint8),
            "MC_MLPERF_INPUT_FLOAT32": np.dtype("<f4"),
        }
        return formats[self.input_format]


BENCHMARKS = {
    "kws01": Benchmark("kws01", "keyword spotting", "MC_MLPERF_INPUT_INT8", 490, "49x10 int8 MFCC features"),
    "ic01": Benchmark("ic01", "image classification", "MC_MLPERF_INPUT_UINT8", 3072, "32x32x3 uint8 pixels"),
    "vww01": Benchmark("vww01", "visual wake words", "MC_MLPERF_INPUT_UINT8", 27648, "96x96x3 uint8 pixels"),
    "ad01": Benchmark(
        "ad01",
        "anomaly detection",
        "MC_MLPERF_INPUT_FLOAT32",
        2560,
        "a window of 640 float32 spectrogram values",
        scores="MC_MLPERF_SCORES_RECONSTRUCTION",
    ),
}


def get_benchmark(name: str | None) -> Benchmark:
    if name not in BENCHMARKS:
        raise MicrocompilerError(
            f"unknown or missing MLPerf Tiny benchmark {name!r}; give --benchmark with one of {', '.join(BENCHMARKS)}"
        )
    return BENCHMARKS[name]


def _c_float(value: float) -> str:
    return f"{float(np.float32(value))!r}f"


def template_values(info: ModelInfo, benchmark: Benchmark, board_name: str) -> dict:
    """The mlperf main.c.j2 values; a one-line error when the model does not suit the benchmark."""
    name = info.name
    if len(info.inputs) != 1 or len(info.outputs) != 1:
        raise MicrocompilerError(
            f"model {name}: an MLPerf Tiny firmware needs one input and one output, not "
            f"{len(info.inputs)} and {len(info.outputs)}"
        )
    tensors: dict[str, dict[str, Any]] = {}
    for role, meta in (("input", info.inputs[0]), ("output", info.outputs[0])):
        if meta.dtype != "int8" or meta.scale is None or meta.zero_point is None:
            raise MicrocompilerError(
                f"model {name}: its {role} {meta.name!r} is {meta.dtype}; the mlperf "
                "template runs int8-quantized models (int8 input and output)"
            )
        tensors[role] = {
            "elements": meta.bytes,
            "scale_c": _c_float(meta.scale),
            "zero_point": int(meta.zero_point),
        }
    per_element = benchmark.input_dtype.itemsize
    if tensors["input"]["elements"] * per_element != benchmark.load_bytes:
        raise MicrocompilerError(
            f"model {name} takes {tensors['input']['elements']} input values but {benchmark.name} "
            f"sends {benchmark.load_bytes // per_element} ({benchmark.load_description}); "
            "is it the right --benchmark?"
        )
    if (
        benchmark.scores == "MC_MLPERF_SCORES_RECONSTRUCTION"
        and tensors["output"]["elements"] != tensors["input"]["elements"]
    ):
        raise MicrocompilerError(
            f"model {name}: {benchmark.name} scores the reconstruction of the input, so the "
            "output must have as many values as the input"
        )
    return {
        "benchmark": benchmark,
        "input": tensors["input"],
        "output": tensors["output"],
        "device_name": f"microcompiler {name} on {board_name}",
    }


def _scale(meta: TensorInfo) -> float:
    if meta.scale is None:  # template_values refused the model
        raise MicrocompilerError(f"the model's tensor {meta.name!r} is not quantized")
    return meta.scale


def _zero_point(meta: TensorInfo) -> int:
    return int(meta.zero_point or 0)


def quantize_window(window: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """ad01's float32 window as the firmware quantizes it (round half away from zero, as TFLite)."""
    scaled = (np.asarray(window, np.float32) / np.float32(scale)).astype(np.float64)
    rounded = np.where(scaled >= 0, np.floor(scaled + 0.5), np.ceil(scaled - 0.5))
    return np.clip(rounded + zero_point, -128, 127).astype(np.int8)


def model_input(benchmark: Benchmark, data: bytes, info: ModelInfo) -> np.ndarray:
    """The model's int8 input for the bytes the runner loads (what crt/src/mlperf_dut.c computes)."""
    meta = info.inputs[0]
    raw = np.frombuffer(data, benchmark.input_dtype)
    if benchmark.input_format == "MC_MLPERF_INPUT_INT8":
        values = raw.astype(np.int8)
    elif benchmark.input_format == "MC_MLPERF_INPUT_UINT8":
        values = (raw.astype(np.int16) - 128).astype(np.int8)
    else:
        values = quantize_window(raw, _scale(meta), _zero_point(meta))
    return values.reshape(meta.shape)


def expected_scores(benchmark: Benchmark, data: bytes, output: np.ndarray, info: ModelInfo) -> np.ndarray:
    """The scores the firmware reports for a model output (float32 arithmetic as in the C)."""
    meta = info.outputs[0]
    dequantized = (output.reshape(-1).astype(np.int32) - _zero_point(meta)).astype(np.float32) * np.float32(
        _scale(meta)
    )
    if benchmark.scores == "MC_MLPERF_SCORES_OUTPUT":
        return dequantized
    window = np.frombuffer(data, "<f4")
    difference = (window - dequantized).astype(np.float64)
    return np.array([np.sum(difference * difference) / difference.size])
