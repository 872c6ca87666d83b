"""docs/rpc.md states the same golden frames as the tests (its examples run in tests/test_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path

from rpc_support import GOLDEN_FRAMES

from microcompiler.rpc.framing import crc16, encode_frame

DOC = Path(__file__).resolve().parents[1] / "docs" / "rpc.md"
ROW = re.compile(r"^\| (\d+) \| (?:\(empty\)|`([0-9a-f ]+)`) \| `([0-9a-f ]+)` \|", re.M)


def test_the_doc_lists_the_golden_frames_of_the_tests():
    rows = [(payload or "", frame) for _, payload, frame in ROW.findall(DOC.read_text())]
    assert rows == GOLDEN_FRAMES
    for payload, frame in rows:
        assert encode_frame(bytes.fromhex(payload)) == bytes.fromhex(frame)


def test_the_doc_names_the_crc_and_its_check_value():
    text = DOC.read_text()
    assert "CRC-16/CCITT-FALSE" in text and "0x1021" in text and "0xFFFF" in text and "0x29B1" in text
    assert crc16(b"123456789") == 0x29B1


def test_the_doc_has_runnable_python_and_the_fuzz_record():
    text = DOC.read_text()
    assert "```python" in text and "microcompiler.connect(" in text and "time_evaluator(" in text
    assert "FUZZ_RESULT" not in text and "QEMU_RESULT" not in text
