"""Host programs share crt's objects within a process (microcompiler/host.py shared_crt_objects): the
runtime is compiled once per compiler and flag set, the programs still run bit-exact, and the objects'
temporary directory goes with cleanup's sweep (at exit and on a signal)."""

from __future__ import annotations

import numpy as np
from conftest import SHARED_MODELS

from microcompiler import cleanup, host
from microcompiler.compiler import compile_model
from microcompiler.inputs import random_inputs


def test_two_programs_compile_the_runtime_once_and_the_sweep_removes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "_crt_objects", {})
    built = []
    real = host.build_crt_objects
    monkeypatch.setattr(host, "build_crt_objects", lambda *a, **k: built.append(a) or real(*a, **k))
    library = compile_model(SHARED_MODELS / "tflm/hello_world_int8.tflite")
    x = random_inputs(library.info.inputs)
    first = host.HostProgram(library, tmp_path / "a", sanitize=True).run([x])[0].outputs
    second = host.HostProgram(library, tmp_path / "b", sanitize=True).run([x])[0].outputs
    assert len(built) == 1 and [a.tobytes() for a in first] == [b.tobytes() for b in second]
    host.HostProgram(library, tmp_path / "c").run([x])  # other flags: their own objects
    assert len(built) == 2
    objects = [o for objs in host._crt_objects.values() for o in objs]
    assert objects and all(o.is_file() for o in objects)
    for path in {o.parent for o in objects}:
        cleanup.remove_dir(path)  # what sweep() does for every registered directory
    assert not any(o.exists() for o in objects)
    # objects removed under it are compiled again, not linked from nowhere
    third = host.HostProgram(library, tmp_path / "d", sanitize=True).run([x])[0].outputs
    assert len(built) == 3 and np.array_equal(third[0], first[0])
