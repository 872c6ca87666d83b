"""A bad link or a misbehaving device: retried, or a clear DeviceError, never a wrong result."""

from __future__ import annotations

import time

import numpy as np
import pytest

from microcompiler.compiler import compile_model
from microcompiler.errors import DeviceError
from microcompiler.inputs import random_inputs
from microcompiler.rpc import DeviceResetError, ModelPlan, Session, SessionClosedError
from microcompiler.rpc.host_project import SERVER_EXE, create_host_project
from microcompiler.transport.faults import FaultyTransport, SilentTransport
from microcompiler.transport.subprocess import SubprocessTransport


@pytest.fixture(scope="module")
def ad01(tmp_path_factory, shared_models):
    """The anomaly-detection model (640-byte input and output, 10 operators) and its expected outputs."""
    library = compile_model(shared_models / "mlperf_tiny/ad01_int8.tflite")
    project = create_host_project(library, tmp_path_factory.mktemp("ad01") / "project")
    plan = ModelPlan.load(project)
    inputs = [random_inputs(library.info.inputs, seed=s) for s in range(4)]
    with Session(SubprocessTransport([str(project / SERVER_EXE)]), plan=plan) as session, session.executor() as ex:
        expected = [ex(*x) for x in inputs]
    return project, plan, inputs, expected


def _device(project):
    return SubprocessTransport([str(project / SERVER_EXE)])


@pytest.mark.parametrize(
    "faults",
    [dict(flip=0.002), dict(drop=0.002), dict(duplicate=0.002), dict(flip=0.001, drop=0.001, duplicate=0.001)],
    ids=["flip", "drop", "duplicate", "all"],
)
def test_damaged_frames_are_retried_and_results_stay_exact(ad01, faults):
    project, plan, inputs, expected = ad01
    link = FaultyTransport(_device(project), seed=1, **faults)
    with Session(link, plan=plan, timeout=10) as session, session.executor() as ex:
        for x, want in zip(inputs, expected):
            got = ex(*x)
            assert [a.tobytes() for a in got] == [b.tobytes() for b in want]
        stats = dict(session.stats)
    assert sum(link.counts.values()) >= 10, link.counts
    assert stats["resends"] > 0 and stats["damaged_frames"] + stats["resends"] > 0, stats


@pytest.mark.parametrize("seed", range(4))
def test_a_terrible_link_never_gives_a_wrong_result(ad01, seed):
    project, plan, inputs, expected = ad01
    link = FaultyTransport(_device(project), seed=seed, flip=0.004, drop=0.004, duplicate=0.004)
    outcomes = []
    try:
        with Session(link, plan=plan, timeout=2.0) as session, session.executor() as ex:
            for x, want in zip(inputs[:2], expected[:2]):
                got = ex(*x)
                assert [a.tobytes() for a in got] == [b.tobytes() for b in want]
                outcomes.append("exact")
    except DeviceError as exc:  # acceptable: a clear error, not garbage
        outcomes.append(str(exc))
    assert outcomes


def test_a_device_reset_mid_session_is_reported_and_a_new_session_works(ad01):
    project, plan, inputs, expected = ad01
    with Session(_device(project), plan=plan) as session:
        ex = session.executor()
        ex.set_input(0, inputs[0][0])
        session.transport.restart()  # the reset button
        with pytest.raises(DeviceResetError, match="device reset: .*announced a new boot"):
            ex.run()
        with pytest.raises(SessionClosedError, match="reset"):
            ex.get_output(0)
        session.reconnect()
        with session.executor() as ex2:
            assert [a.tobytes() for a in ex2(*inputs[1])] == [b.tobytes() for b in expected[1]]


def test_a_reset_is_caught_even_when_its_boot_message_is_lost(ad01):
    project, plan, inputs, _ = ad01
    with Session(_device(project), plan=plan) as session:
        buf = session.alloc(16)
        session.transport.restart()
        time.sleep(0.2)
        session.transport.read(100_000, 0.2)  # the BOOT and LOG frames vanish on the line
        with pytest.raises(DeviceResetError, match="boot nonce changed"):
            buf.read()


def test_a_silent_device_times_out_within_the_configured_time():
    start = time.monotonic()
    with pytest.raises(DeviceError, match="did not answer HELLO within 0.7 s; check that it runs"):
        Session(SilentTransport(), timeout=0.7)
    assert 0.7 <= time.monotonic() - start < 1.5


def test_a_device_that_falls_silent_mid_session_times_out(ad01):
    project, plan, inputs, _ = ad01
    link = FaultyTransport(_device(project), drop=1.0)
    link.enabled = False
    with Session(link, plan=plan, timeout=0.8) as session:
        ex = session.executor()
        link.enabled = True
        start = time.monotonic()
        with pytest.raises(DeviceError, match="did not answer WRITE within 0.8 s"):
            ex.set_input(0, inputs[0][0])
        assert time.monotonic() - start < 1.5
        link.enabled = False


def test_a_link_that_corrupts_every_reply_says_so(ad01):
    project, plan, _, _ = ad01
    link = FaultyTransport(_device(project), flip=0.3, directions="from_device")
    link.enabled = False
    with Session(link, plan=plan, timeout=1.0) as session:
        link.enabled = True
        with pytest.raises(DeviceError, match="damaged frame.*corrupts data"):
            session.alloc(8)
        link.enabled = False


def test_faulty_transport_is_deterministic():
    class Sink(SilentTransport):
        def __init__(self):
            super().__init__()
            self.data = b""

        def write(self, data):
            self.data += data

    outs = []
    for _ in range(2):
        sink = Sink()
        FaultyTransport(sink, seed=5, flip=0.1, drop=0.1, duplicate=0.1).write(bytes(range(256)) * 4)
        outs.append(sink.data)
    assert outs[0] == outs[1] != bytes(range(256)) * 4
    assert np.frombuffer(outs[0], np.uint8).size != 1024 or outs[0] != bytes(range(256)) * 4


def test_a_crashed_board_is_reported_with_its_fault_line():
    class CrashedBoard(SilentTransport):
        """What bare-metal firmware prints when it faults: a text line, then nothing."""

        def __init__(self):
            super().__init__()
            self.pending_text = b""

        def write(self, data):
            self.pending_text = b"MC-FAULT HardFault pc 0x00001234 lr 0x00000567\n"

        def read(self, n, timeout):
            out, self.pending_text = self.pending_text, b""
            return out or super().read(n, min(timeout, 0.01))

    with pytest.raises(DeviceError, match="crashed: MC-FAULT HardFault pc 0x00001234"):
        Session(CrashedBoard(), timeout=2.0)
