"""Parse the standalone report that firmware (host, bare metal, Zephyr) prints after a run.

The format is defined in crt/include/microcompiler/report.h.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.errors import DeviceError
from microcompiler.ir import np_dtype


@dataclass
class StandaloneResult:
    outputs: list[np.ndarray]
    ticks: int
    hz: int
    status: int


def parse_reports(text: str, outputs_meta: list[dict]) -> list[StandaloneResult]:
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


def _decode(lines: list[str], end: str, outputs_meta: list[dict]) -> StandaloneResult:
    values: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition(" ")
        values[key] = value
    parts = end.split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else -1
    if status != 0:
        raise DeviceError(f"the model run failed on the device with status {status} "
                          f"({parts[2] if len(parts) > 2 else 'unknown'})")
    outputs = []
    for k, meta in enumerate(outputs_meta):
        hexdata = values.get(f"output{k}")
        if hexdata is None:
            raise DeviceError(f"the device report is missing output{k}; the link dropped data")
        try:
            raw = bytes.fromhex(hexdata)
        except ValueError:
            raise DeviceError(f"the device report for output{k} is garbled; check the serial link") from None
        if len(raw) != meta["bytes"]:
            raise DeviceError(f"output{k} has {len(raw)} bytes, expected {meta['bytes']}; the link dropped data")
        outputs.append(np.frombuffer(raw, dtype=np_dtype(meta["dtype"])).reshape(meta["shape"]).copy())
    return StandaloneResult(outputs, int(values.get("ticks", "0")), int(values.get("hz", "0")), status)
