"""Parse the standalone report that firmware (host, bare metal, Zephyr) prints after a run.

The format is defined in crt/include/microcompiler/report.h.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import DeviceError
from microcompiler.ir import np_dtype


@dataclass
class StandaloneResult:
    outputs: list[np.ndarray]
    ticks: int
    hz: int
    status: int


def parse_reports(text: str, outputs_meta: Sequence[TensorInfo]) -> list[StandaloneResult]:
    """Every complete MC-BEGIN..MC-END block in text, decoded with the model's output metadata."""
    results = []
    block: list[str] | None = None
    for line in text.splitlines():
        line = line.strip()
        if line == "MC-BEGIN":
            block = []
        elif line.startswith("MC-END") and block is not None:
            results.append(_decode(block, line, outputs_meta))
            block = None
        elif block is not None:
            block.append(line)
    return results


def _decode(lines: list[str], end: str, outputs_meta: Sequence[TensorInfo]) -> StandaloneResult:
    values: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition(" ")
        values[key] = value
    parts = end.split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else -1
    if status != 0:
        raise DeviceError(
            f"the model run failed on the device with status {status} ({parts[2] if len(parts) > 2 else 'unknown'})"
        )
    outputs = []
    for k, meta in enumerate(outputs_meta):
        hexdata = values.get(f"output{k}")
        if hexdata is None:
            raise DeviceError(f"the device report is missing output{k}; the link dropped data")
        try:
            raw = bytes.fromhex(hexdata)
        except ValueError:
            raise DeviceError(f"the device report for output{k} is garbled; check the serial link") from None
        if len(raw) != meta.bytes:
            raise DeviceError(f"output{k} has {len(raw)} bytes, expected {meta.bytes}; the link dropped data")
        outputs.append(np.frombuffer(raw, dtype=np_dtype(meta.dtype)).reshape(meta.shape).copy())
    return StandaloneResult(outputs, int(values.get("ticks", "0")), int(values.get("hz", "0")), status)


def model_report(text: str, model: str) -> str:
    """One model's report out of a firmware's with several (docs/multiple_models.md), where each
    model's lines carry its name (``<model>.output0 ...``, ``<model>.ticks``, ``<model>.status``): its
    own lines without the prefix, the shared ones (``hz``, ``stack_bytes``, ``MC-...``), and its own
    status on ``MC-END``."""
    prefix = model + "."
    lines, status = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(prefix):
            key, _, value = line[len(prefix) :].partition(" ")
            if key == "status":
                status = value
            else:
                lines.append(f"{key} {value}")
        elif line.startswith("MC-END") and status is not None:
            lines.append(f"MC-END {status} {model}")
        elif line.startswith(("MC-", "hz ", "stack_bytes ")):
            lines.append(line)
    return "\n".join(lines)
