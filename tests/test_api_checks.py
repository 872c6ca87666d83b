"""The Python API is the command line's equal (issue 35 item 3): every argument checked the same way,
with the same one-line MicrocompilerError before anything is built or run, and ``open_model``'s
temporary project removed at exit even without ``close()``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from harness import cli

from microcompiler import api
from microcompiler.errors import MicrocompilerError

ROOT = Path(__file__).resolve().parents[1]
TINY = "examples/tiny_cnn/tiny_cnn_int8.tflite"


@pytest.mark.parametrize(
    "call, fragment",
    [
        (
            lambda: api.validate(TINY, modes=("bogus",)),
            "unknown mode 'bogus'; give one or both of standalone, host-driven",
        ),
        (lambda: api.validate(TINY, modes=()), "modes=(): give a tuple of one or both of standalone, host-driven"),
        (lambda: api.validate(TINY, modes="standalone"), "modes='standalone': give a tuple"),
        (lambda: api.validate(TINY, modes=("standalone", "standalone")), "a mode given twice"),
        (lambda: api.validate(TINY, inputs=0), "inputs=0: give between 1 and 100,000 seeded inputs"),
        (lambda: api.validate(TINY, inputs=True), "inputs=True: give between 1 and"),
        (lambda: api.validate(TINY, pixel_range=(1, 1)), "pixel_range=(1, 1): give two different finite numbers"),
        (lambda: api.validate(TINY, reference="missing.tflite"), "cannot read reference model missing.tflite"),
        (lambda: api.validate("missing.tflite"), "cannot read model file missing.tflite"),
        (lambda: api.bench(TINY, number=10**12), "number= 1000000000000 is more than the device runs in one"),
        (lambda: api.bench(TINY, number=0), "number= 0: give a whole number of at least 1"),
        (lambda: api.bench(TINY, repeat=2.5), "repeat= 2.5: give a whole number of at least 1"),
        (lambda: api.bench(TINY, inputs=[]), "inputs= gives 0 array(s) but the model has 1 input(s)"),
        (lambda: api.bench(TINY, inputs=[np.zeros((2, 2), np.int8)]), "inputs[0] has shape [2, 2] but the model"),
    ],
)
def test_bad_arguments_are_one_line_errors_before_any_work(call, fragment):
    start = time.monotonic()
    with pytest.raises(MicrocompilerError) as caught:
        call()
    message = str(caught.value)
    assert fragment in message and "\n" not in message, message
    assert time.monotonic() - start < 10  # refused before a build or a run


def test_the_api_and_the_command_refuse_the_same_bench_count():
    with pytest.raises(MicrocompilerError) as caught:
        api.bench(TINY, number=10**12)
    proc = cli("bench", TINY, "--board", "host", "--number", str(10**12), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    # the same sentence, each naming the argument its own way
    assert proc.stderr.split("error: ", 1)[1].strip() == str(caught.value).replace("number=", "--number").replace(
        "repeat=", "--repeat"
    )


def test_open_model_removes_its_temporary_project_at_exit_without_close(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = textwrap.dedent(
        f"""
        import numpy as np, os
        from microcompiler import api
        session = api.open_model({TINY!r})
        ex = session.executor()
        y = ex(np.zeros((1, 16, 16, 1), np.int8))
        print(sorted(os.listdir({str(tmp)!r})), len(y))
        # no close(): the interpreter exits with the session open
        """
    )
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "microcompiler-rpc-" in proc.stdout  # the project was there while the session was open
    assert [p.name for p in tmp.iterdir() if p.name.startswith("microcompiler-rpc-")] == []
