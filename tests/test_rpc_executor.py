"""Host-driven execution on the host RPC server: every shared model matches its standalone run exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_MODELS

from microcompiler.api import connect, open_model
from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.rpc import ModelPlan
from microcompiler.rpc.host_project import create_host_project

MODELS = sorted(p.relative_to(SHARED_MODELS).as_posix() for p in SHARED_MODELS.rglob("*.tflite"))


@pytest.mark.parametrize("model", MODELS)
def test_host_driven_matches_standalone_bit_for_bit(model, shared_models, tmp_path):
    """Operator by operator over RPC vs the standalone <name>_run() in the same firmware."""
    library = compile_model(shared_models / model)
    meta = library.metadata
    with open_model(library, "host", project_dir=tmp_path / "rpc") as session:
        with session.executor() as ex:
            plan = ex.plan
            io_slots = [*plan.input_slots, *plan.output_slots]
            for seed in range(2):
                x = random_inputs(library.info.inputs, seed=seed)
                got = ex(*x)
                # the same inputs through <name>_run(), the standalone entry point, on the same tensors
                for k, a in enumerate(x):
                    ex.set_input(k, a)
                session.call(f"{meta['name']}_run", *(ex.pool.at(plan.slots[s][0]) for s in io_slots))
                for k, a in enumerate(got):
                    assert a.tobytes() == ex.get_output(k).tobytes(), f"output {k} differs (seed {seed})"
            assert len(ex.last_ticks) == len(meta["operators"])


@pytest.mark.parametrize("model", ["tflm/hello_world_float.tflite", "mlperf_tiny/kws_ref_model.tflite"])
def test_host_driven_matches_the_standalone_host_program(model, shared_models, tmp_path):
    library = compile_model(shared_models / model)
    inputs = [random_inputs(library.info.inputs, seed=s) for s in range(2)]
    standalone = HostProgram(library, tmp_path / "standalone").run(inputs)
    with open_model(library, "host", project_dir=tmp_path / "rpc") as session, session.executor() as ex:
        for want, x in zip(standalone, inputs):
            got = ex(*x)
            assert [a.tobytes() for a in got] == [b.tobytes() for b in want.outputs]


@pytest.fixture(scope="module")
def hello_project(tmp_path_factory, shared_models):
    library = compile_model(shared_models / "tflm/hello_world_int8.tflite")
    return create_host_project(library, tmp_path_factory.mktemp("hello") / "project"), library


def test_connect_to_a_project_directory_and_profile(hello_project):
    project, library = hello_project
    with connect(project) as session:
        assert session.logs == ["microcompiler RPC server ready: model hello_world_int8"]
        names = session.function_names()
        assert names[-2:] == ["hello_world_int8_run", "hello_world_int8_reset"] and len(names) == 5
        with session.executor() as ex:
            ex.set_input(0, np.array([[12]], dtype=np.int8))
            ex.run()
            y = ex.get_output(0)
            rows = ex.profile(number=20)
            assert [r["kind"] for r in rows] == ["FULLY_CONNECTED"] * 3
            assert all(r["ticks"] >= 0 and r["timer_hz"] == 1_000_000_000 for r in rows)
            whole = ex.time_inference(number=20, repeat=2)
            assert len(whole.ticks) == 2 and whole.number == 20
            # the whole-model function computes the same as the operator-by-operator run
            np.testing.assert_array_equal(ex.get_output(0), y)


def test_executor_rejects_bad_inputs(hello_project):
    project, _ = hello_project
    with connect(project) as session, session.executor() as ex:
        with pytest.raises(MicrocompilerError, match="needs dtype int8, got float32"):
            ex.set_input(0, np.zeros((1, 1), np.float32))
        with pytest.raises(MicrocompilerError, match="needs shape"):
            ex.set_input(0, np.zeros((3,), np.int8))
        with pytest.raises(MicrocompilerError, match="has 1 inputs; there is no input 1"):
            ex.set_input(1, np.zeros((1, 1), np.int8))


def test_plan_round_trips_and_rejects_damage(hello_project, tmp_path):
    project, library = hello_project
    plan = ModelPlan.load(project)
    assert [op.function for op in plan.ops] == [op["function"] for op in library.metadata["operators"]]
    assert plan.description == ModelPlan.from_library(library).description
    with pytest.raises(MicrocompilerError, match="damaged"):
        ModelPlan(plan.metadata, plan.description[:-5])
    with pytest.raises(MicrocompilerError, match="cannot read the host-driven plan"):
        ModelPlan.load(tmp_path)


def test_session_without_a_plan_says_how_to_get_one(hello_project):
    project, _ = hello_project
    from microcompiler.rpc import Session
    from microcompiler.transport.subprocess import SubprocessTransport

    with Session(SubprocessTransport([str(Path(project) / "rpc_server")])) as session:
        with pytest.raises(MicrocompilerError, match="does not know the device's model"):
            session.executor()


def test_executor_refuses_a_transposed_input_of_the_right_size(tmp_path):
    """Same number of elements, other shape: refused (only leading 1s may differ), never reshaped."""
    from microcompiler.api import open_model
    from microcompiler.errors import MicrocompilerError

    model = SHARED_MODELS / "mlperf_tiny/kws_ref_model.tflite"
    with open_model(model, "host", project_dir=tmp_path / "rpc") as session:
        with session.executor() as ex:
            with pytest.raises(MicrocompilerError, match="only leading 1s may differ"):
                ex(np.zeros((1, 10, 49, 1), np.int8))
            assert ex(np.zeros((49, 10, 1), np.int8))[0].shape[-1] == 12  # leading 1 dropped: fine
