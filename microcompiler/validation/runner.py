"""``validate``: run samples on the device, compare with TFLite Micro (and the float model), and on a
mismatch find the first diverging layer.

Standalone: each sample is compiled into the firmware, which is built and run (the project is
rewritten in place, so only the input and the link are rebuilt). Host-driven: one session runs every
sample over RPC. Both go through the same targets as ``run`` (microcompiler/targets).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from microcompiler.boards import Board
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import MicrocompilerError
from microcompiler.progress import Progress
from microcompiler.targets import HOST_DRIVEN, STANDALONE, target_for
from microcompiler.targets.base import create_options, start_on_board
from microcompiler.timing import measured
from microcompiler.validation.layers import first_divergence
from microcompiler.validation.metrics import dequantize, output_metrics, within_tolerance
from microcompiler.validation.onnx_reference import OnnxReference
from microcompiler.validation.reference import Reference

EXACT_DTYPES = ("int8", "uint8", "int16", "int32", "bool")  # outputs that must match TFLM bit for bit


@dataclass
class Sample:
    inputs: list[np.ndarray]
    source: str  # "seed 3" or the .npy file


@dataclass
class DeviceOptions:
    template: str = "baremetal"
    port: str | None = None
    rpc_timeout: float = 10.0
    timeout: float = 300.0
    keep: str | None = None  # keep the projects in DIR/standalone and DIR/host-driven
    zephyr_base: str | None = None  # --zephyr-base: the workspace Zephyr projects record


def _compare(meta: ModelInfo, ours: list[list[np.ndarray]], theirs: list[list[np.ndarray]]) -> list[dict]:
    return [
        output_metrics(o.name, [s[k] for s in ours], [s[k] for s in theirs], o.dtype in EXACT_DTYPES)
        for k, o in enumerate(meta.outputs)
    ]


def check_float_model(ref: Reference, meta: ModelInfo) -> None:
    """Refuse (before anything runs) a --reference model whose inputs or outputs are not the model's."""
    for kind, details, tensors in (
        ("input", ref.input_details, meta.inputs),
        ("output", ref.output_details, meta.outputs),
    ):
        for k, m in enumerate(tensors):
            try:
                shape = [int(d) for d in details(k)["shape"]]
            except IndexError:
                raise MicrocompilerError(
                    f"the --reference model has fewer {kind}s than the model's "
                    f"{len(tensors)}; pass the float model this one was quantized "
                    "from"
                ) from None
            if int(np.prod(shape)) != int(np.prod(m.shape)):
                raise MicrocompilerError(
                    f"the --reference model's {kind} {k} has shape {shape} but the model's has "
                    f"{list(m.shape)}; pass the float model this one was quantized from"
                )


def _float_comparison(
    meta: ModelInfo, samples: list[Sample], ours: list[list[np.ndarray]], ref: Reference, collect: dict | None = None
) -> list[dict]:
    """Our outputs dequantized against the float model run on the dequantized inputs."""
    theirs = []
    with Progress(len(samples), "float reference") as bar:
        for s in samples:
            feeds = []
            for k, (x, m) in enumerate(zip(s.inputs, meta.inputs)):
                details = ref.input_details(k)
                want = np.dtype(details["dtype"])
                feeds.append((dequantize(x, m).astype(want) if want.kind == "f" else x).reshape(details["shape"]))
            theirs.append([np.asarray(y, dtype=np.float32) for y in ref.run(feeds)])
            bar.step(s.source)
    if collect is not None:
        collect["float"] = theirs
    deq = [[dequantize(y, m) for y, m in zip(outs, meta.outputs)] for outs in ours]
    return [
        output_metrics(
            o.name, [s[k].reshape(t[k].shape) for s, t in zip(deq, theirs)], [t[k] for t in theirs], exact=False
        )
        for k, o in enumerate(meta.outputs)
    ]


def _project_dir(options: DeviceOptions, tmp: str, mode: str) -> Path:
    return Path(options.keep) / mode if options.keep else Path(tmp) / mode


def run_standalone(
    library, board: Board, samples: list[Sample], options: DeviceOptions, tmp: str, log
) -> list[list[np.ndarray]]:
    target = target_for(board, options.template)
    project_dir = _project_dir(options, tmp, STANDALONE)
    # One firmware runs the inputs in order: a model with state carries it along; on the host a
    # stateless model's inputs are independent runs of one program (one build, not one per input).
    if library.info.keeps_state or board.is_host:
        with Progress(1, "standalone sequence" if library.info.keeps_state else "standalone") as bar:
            project = target.create(
                library,
                board,
                project_dir,
                input_steps=[s.inputs for s in samples],
                **create_options(target, options.zephyr_base),
            )
            target.build(project, log=_quiet)
            result = target.flash(project, timeout=options.timeout, log=_quiet, port=options.port)
            bar.step(f"{len(samples)} inputs")
        return result.step_outputs
    outputs = []
    with Progress(len(samples), "standalone") as bar:
        for s in samples:
            # the project is rewritten in place: only the input is rebuilt
            project = target.create(
                library, board, project_dir, input=s.inputs, **create_options(target, options.zephyr_base)
            )
            target.build(project, log=_quiet)
            result = target.flash(project, timeout=options.timeout, log=_quiet, port=options.port)
            outputs.append(result.outputs)
            bar.step(s.source)
    return outputs


def _quiet(_: str) -> None:
    pass


def validate(
    library,
    board: Board,
    samples: list[Sample],
    model_bytes: bytes,
    original_graph,
    *,
    modes: tuple[str, ...] = (STANDALONE, HOST_DRIVEN),
    float_bytes: bytes | None = None,
    options: DeviceOptions | None = None,
    log: Callable[[str], None] = _quiet,
    collect: dict | None = None,
    onnx_path: str | Path | None = None,
) -> dict:
    """The validation report (see docs/validate.md); report["passed"] is False on any mismatch.
    ``collect``: filled with the outputs themselves, per sample: {mode: device outputs, "tflm": TFLite
    Micro's, "float": the float model's} (for labels and saved outputs).
    ``onnx_path``: the model is an ONNX model, and ONNX Runtime is the reference ("ort" in the report and
    in ``collect``); outputs only, no layer-by-layer search."""
    options = options or DeviceOptions()
    meta = library.info
    reference: Reference | OnnxReference
    against = "ort" if onnx_path is not None else "tflm"
    if onnx_path is not None:
        if float_bytes is not None:
            raise MicrocompilerError("--reference is the float TFLite model of a quantized one; not for ONNX models")
        reference = OnnxReference(onnx_path, len(meta.outputs))
    else:
        reference = Reference(model_bytes, len(meta.outputs), timeout=options.timeout)
    float_ref = None
    if float_bytes is not None:
        float_ref = Reference(float_bytes, len(meta.outputs), what="the --reference model", timeout=options.timeout)
        check_float_model(float_ref, meta)
    expected = []
    with Progress(len(samples), "ONNX Runtime" if onnx_path is not None else "TFLite Micro") as bar:
        for s in samples:
            expected.append(reference.run(s.inputs))
            bar.step(s.source)
    device: dict[str, list[list[np.ndarray]]] = {}
    operator_times = None
    comparisons: list[dict] = []
    divergence = None
    with tempfile.TemporaryDirectory(prefix="microcompiler-validate-") as tmp:
        if STANDALONE in modes:
            device[STANDALONE] = run_standalone(library, board, samples, options, tmp, log)
            comparisons.append(
                {"mode": STANDALONE, "against": against, "outputs": _compare(meta, device[STANDALONE], expected)}
            )
        mismatch = _first_mismatch(meta, device.get(STANDALONE), expected)
        if onnx_path is not None and HOST_DRIVEN not in modes:
            mismatch = None  # no layer-by-layer search against ONNX Runtime: the outputs say it
        if HOST_DRIVEN in modes or mismatch is not None:
            log(f"starting host-driven firmware on {board.name}")
            _, _, session = start_on_board(
                library,
                board,
                _project_dir(options, tmp, HOST_DRIVEN),
                template=options.template,
                port=options.port,
                log=_quiet,
                timeout=options.rpc_timeout,
                call_timeout=options.timeout,
                zephyr_base=options.zephyr_base,
            )
            with session, session.executor() as ex:
                if HOST_DRIVEN in modes:
                    outs, ticks = [], []
                    with Progress(len(samples), "host-driven") as bar:
                        for s in samples:
                            outs.append(ex(*s.inputs))
                            ticks.append(list(ex.last_ticks))
                            bar.step(s.source)
                    device[HOST_DRIVEN] = outs
                    operator_times = _operator_times(meta, board, ticks, session.device.timer_hz)
                    comparisons.append(
                        {"mode": HOST_DRIVEN, "against": against, "outputs": _compare(meta, outs, expected)}
                    )
                    if mismatch is None:
                        mismatch = _first_mismatch(meta, outs, expected)
                if mismatch is not None and onnx_path is None:
                    log(f"outputs differ on {samples[mismatch].source}: comparing every layer host-driven")
                    preserved = Reference(model_bytes, len(meta.outputs), preserve=True, timeout=options.timeout)
                    if meta.keeps_state:  # replay the sequence up to the mismatch on both sides
                        ex.reset()
                        for s in samples[:mismatch]:
                            ex(*s.inputs)
                            preserved.run(s.inputs)
                    divergence = first_divergence(ex, library, preserved, samples[mismatch].inputs, original_graph)
                    divergence["sample"] = samples[mismatch].source
    passed = all(o["passed"] for c in comparisons for o in c["outputs"])
    # "exact" only when every output equals TFLM's bit for bit (floats too); otherwise the report
    # says how far: the largest float error in ulp
    bit_exact = passed and all(o["bit_exact"] for c in comparisons for o in c["outputs"])
    max_ulp = max((o.get("max_ulp_error", 0) for c in comparisons for o in c["outputs"]), default=0)
    if float_ref is not None:
        first_mode = next(iter(device))
        comparisons.append(
            {
                "mode": first_mode,
                "against": "float",
                "outputs": _float_comparison(meta, samples, device[first_mode], float_ref, collect),
            }
        )
    for ref in (reference, float_ref):  # the interpreters' child processes (on an error: cleanup's sweep)
        if ref is not None:
            ref.close()
    if collect is not None:
        collect.update(device)
        collect[against] = expected
    report = {
        "model": meta.name,
        "board": board.name,
        "samples": [s.source for s in samples],
        "modes": list(device),
        "passed": passed,
        "bit_exact": bit_exact,
        "max_ulp_error": max_ulp,
        "comparisons": comparisons,
        "divergence": divergence,
    }
    if operator_times is not None:
        report["operator_times"] = operator_times
    return report


def _operator_times(meta: ModelInfo, board: Board, ticks: list[list[int]], timer_hz: int) -> dict | None:
    """The device time of each operator in the host-driven runs: the median over the samples."""
    if not ticks or not ticks[0]:
        return None
    ops = meta.operators
    rows = []
    for k, column in enumerate(zip(*ticks)):
        median = int(np.median(column))
        op = ops[k] if k < len(ops) else None
        rows.append(
            {
                "index": op.index if op else k,
                "layer": (op.layer_name or op.layer or "") if op else "",
                "kind": op.kind if op else "",
                "ticks": median,
                "time": measured(median, timer_hz, board),
            }
        )
    return {"board": board.name, "runs": len(ticks), "timer_hz": timer_hz, "operators": rows}


def _first_mismatch(
    meta: ModelInfo, outputs: list[list[np.ndarray]] | None, expected: list[list[np.ndarray]]
) -> int | None:
    """The first sample whose outputs are not exact (integers) or not within tolerance (floats)."""
    for k, (ours, theirs) in enumerate(zip(outputs or [], expected)):
        for a, b, m in zip(ours, theirs, meta.outputs):
            a = np.asarray(a).reshape(np.shape(b))
            if not (np.array_equal(a, b) if m.dtype in EXACT_DTYPES else within_tolerance(a, b)):
                return k
    return None
