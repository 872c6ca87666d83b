#!/usr/bin/env python3
"""Compile mutated models and report every Python exception that is not a MicrocompilerError.

    python scripts/fuzz_models.py --examples 20000            # the long run (docs/reliability.md)
    python scripts/fuzz_models.py --examples 500 --seed 7 --save-corpus
    python scripts/fuzz_models.py --structured --run --examples 20000 --seed 1   # mutants run against TFLM
    python scripts/fuzz_models.py --structured --run --seeds Signal,CAST --examples 3000 --seed 40
    python scripts/fuzz_models.py --structured --prepare-gaps --examples 60000 --seed 4   # docs/prepare_checks.md

``--structured`` mutates the model's fields instead of its bytes (tests/fuzz/structure_mutations.py:
shapes, types, tensor indices, quantization fields, operator codes, input/output lists, options);
``--run`` also builds every mutant that compiles for the host with ASan and UBSan, runs it on a
seeded input and compares it with TFLM (the interpreter in a child process, tests not needed):
a sanitizer report, a hang, a build failure or an output that differs where TFLM runs the model
is a failure. The run ends with the counts of each outcome. Its seeds are small built models and
the single-operator models of tests/fuzz/op_seeds.py; crt's objects are compiled once, each mutant's
model C at -O0 with the sanitizers, and one long-lived TFLM child loads mutant after mutant
(MutantRunner).

Mutants are seeded (``--seed``), so a run reproduces exactly. Seeds: every model in ../shared/models
and the small built models of tests/fuzz/model_mutations.py; mutations: one, two or many bit flips,
byte sets, splices of the model's own bytes, insertions, deletions and truncations. Each failure is
printed with its model and edits; ``--save-corpus`` keeps one case per distinct failure (exception
type and place) in tests/data/fuzz_corpus/, which tests/test_errors.py replays. Exit status 1 if
anything escaped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "fuzz")]

from model_mutations import CORPUS_DIR, apply_edits, materialize, op_seed_names, random_edits, seed_bytes, seed_names  # noqa: E402
from structure_mutations import mutate_structure, outputs_agree, tflm_defined  # noqa: E402

from microcompiler.compiler import compile_model  # noqa: E402
from microcompiler.errors import MicrocompilerError  # noqa: E402

PER_MUTANT_SECONDS = 60


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"compiling took more than {PER_MUTANT_SECONDS} s")


def check(model: str, edits: list[dict], work: Path) -> tuple[str, str] | None:
    """None if the mutant compiles or raises our error; else (signature, message)."""
    path = work / "m.tflite"
    path.write_bytes(apply_edits(seed_bytes(model), edits))
    signal.alarm(PER_MUTANT_SECONDS)
    try:
        compile_model(path)
    except MicrocompilerError as exc:
        if "\n" in str(exc).strip():
            return "multi-line MicrocompilerError", str(exc)[:300]
    except (Exception, Hang) as exc:  # noqa: BLE001 - that is the point
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames if "microcompiler" in Path(f.filename).parts] or frames
        where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}"
        return f"{type(exc).__name__} at {where}", f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.alarm(0)
    return None


# Small seeds for --run (each mutant that compiles is built with the sanitizers), with the
# single-operator models of tests/fuzz/op_seeds.py: one or more per operator family.
RUN_SEEDS = (
    "built:fc_int8",
    "built:conv_add_float",
    "built:mean_softmax_int16",
    "built:dw_pool_int8",
    "built:concat_relu_float",
    "tflm/hello_world_int8.tflite",
    "tflm/hello_world_float.tflite",
)
RUN_SECONDS = 20  # one mutant's program, and TFLM's run of it
SANITIZE_OPT = "-O0"  # ASan/UBSan check the same at -O0, and it compiles about 4x faster than -O1


class MutantRunner:
    """Builds and runs compiled mutants against TFLM, paying the fixed costs once: crt's objects
    are compiled with the sanitizers once (each mutant compiles only its model's C and the host
    main), and one long-lived TFLM child (bounded: RUN_SECONDS per call) loads each mutant in turn;
    a child that TFLM aborted or that timed out is replaced for the next mutant."""

    def __init__(self, work: Path):
        from microcompiler.host import build_crt_objects

        self.work = work
        self.crt_objects = build_crt_objects(work / "crt", sanitize=True, sanitize_opt=SANITIZE_OPT)
        self.process = None

    def reference(self, data: bytes, n_outputs: int):
        from microcompiler.validation.reference import Reference, ReferenceProcess

        if self.process is None or not self.process.alive:
            self.process = ReferenceProcess(RUN_SECONDS)
        return Reference(data, n_outputs, what="the mutant", timeout=RUN_SECONDS, process=self.process)

    def close(self) -> None:
        if self.process is not None:
            self.process.close()

    def run(self, path: Path, library) -> tuple[str, str]:
        """Build the compiled mutant with ASan/UBSan, run it on one seeded input, compare with TFLM.
        (outcome, detail): "agree", "tflm-refuses", or a failure: "sanitizer", "hang", "build", "differs"."""
        import numpy as np

        from microcompiler.errors import DeviceError, ToolchainError
        from microcompiler.host import HostProgram
        from microcompiler.inputs import random_inputs
        from microcompiler.validation.reference import ReferenceTimeout

        meta = library.metadata
        inputs = random_inputs(library.info.inputs, seed=0)
        try:
            with self.reference(path.read_bytes(), len(meta["outputs"])) as reference:
                expected = reference.run(inputs)
        except ReferenceTimeout as exc:
            return "tflm-hangs", str(exc)[:200]
        except MicrocompilerError as exc:
            return "tflm-refuses", str(exc)[:200]
        build = self.work / "build"
        try:
            program = HostProgram(
                library, build, sanitize=True, crt_objects=self.crt_objects, sanitize_opt=SANITIZE_OPT
            )
        except ToolchainError as exc:
            return "build", str(exc)[:600]
        try:
            ours = program.run([inputs], timeout=RUN_SECONDS)[0].outputs
        except DeviceError as exc:
            return "hang", str(exc)[:300]
        except ToolchainError as exc:
            text = str(exc)
            kind = "sanitizer" if ("Sanitizer" in text or "runtime error" in text) else "crash"
            return kind, text[-600:]
        defined = tflm_defined(path.read_bytes(), expected)
        for k, (a, b) in enumerate(zip(ours, expected)):
            if not outputs_agree(np.asarray(a), b, defined[k] if k < len(defined) else None):
                return (
                    "differs",
                    f"output {k}: ours {np.asarray(a).reshape(-1)[:6]}, TFLM {np.asarray(b).reshape(-1)[:6]}",
                )
        return "agree", ""


class PrepareProbe:
    """--prepare-gaps: loads each compiled mutant into TFLM (no build) and returns TFLM's own message
    when its prepare step refuses the model: microcompiler compiled something TFLM refuses, a check of
    docs/prepare_checks.md that is missing. One long-lived TFLM child; its stderr holds the message."""

    def __init__(self):
        self.process = None

    def refusal(self, data: bytes, n_outputs: int) -> str | None:
        from microcompiler.validation.reference import Reference, ReferenceProcess, ReferenceTimeout

        if self.process is None or not self.process.alive:
            self.process = ReferenceProcess(RUN_SECONDS)
        log = self.process._log  # the child's stderr: TFLM prints which kernels/<op>.cc check failed
        log.seek(0, 2)
        start = log.tell()
        try:
            with Reference(data, n_outputs, what="the mutant", timeout=RUN_SECONDS, process=self.process):
                return None
        except ReferenceTimeout:
            return None
        except MicrocompilerError as exc:
            try:
                log.seek(start)
                said = " | ".join(ln.strip() for ln in log.read().decode(errors="replace").splitlines() if ln.strip())
            except (OSError, ValueError):  # the child died and its log was closed
                said = ""
            return said or str(exc)

    def close(self) -> None:
        if self.process is not None:
            self.process.close()


def structured(args) -> int:
    """--structured: field-level mutants; with --run, built and compared with TFLM."""
    import shutil

    rng = random.Random(args.seed)
    names = (
        [n for n in seed_names() if n in RUN_SEEDS] + op_seed_names() if args.run or args.prepare_gaps else seed_names()
    )
    if args.seeds:
        wanted = [w for w in args.seeds.split(",") if w]
        names = [n for n in names if any(w in n for w in wanted)]
        if not names:
            print(f"no seed model's name contains any of {wanted}", file=sys.stderr)
            return 2
    counts: dict[str, int] = {}
    failures = {"traceback", "hang", "sanitizer", "differs", "build", "crash", "multi-line", "prepare-gap"}
    seen: dict[str, int] = {}
    start = time.monotonic()
    done = 0
    with tempfile.TemporaryDirectory(prefix="microcompiler-fuzz-") as tmp:
        work = Path(tmp)
        runner = MutantRunner(work) if args.run else None
        probe = PrepareProbe() if args.prepare_gaps else None
        for i in range(args.examples):
            if args.seconds and time.monotonic() - start > args.seconds:
                break
            model = rng.choice(names)
            try:
                data, notes = mutate_structure(rng, seed_bytes(model))
            except Exception:  # noqa: BLE001 - the object API cannot pack this edit: not a mutant
                counts["unpackable"] = counts.get("unpackable", 0) + 1
                continue
            path = work / "m.tflite"
            path.write_bytes(data)
            outcome, detail = "compiled", ""
            signal.alarm(PER_MUTANT_SECONDS)
            try:
                library = compile_model(path)
            except MicrocompilerError as exc:
                outcome = "multi-line" if "\n" in str(exc).strip() else "refused"
                detail = str(exc)[:300]
            except (Exception, Hang) as exc:  # noqa: BLE001 - that is the point
                frames = traceback.extract_tb(exc.__traceback__)
                ours = [f for f in frames if "microcompiler" in Path(f.filename).parts] or frames
                outcome = "hang" if isinstance(exc, Hang) else "traceback"
                detail = f"{type(exc).__name__} at {Path(ours[-1].filename).name}:{ours[-1].lineno}: {str(exc)[:200]}"
            finally:
                signal.alarm(0)
            if outcome == "compiled" and probe is not None:
                said = probe.refusal(data, len(library.metadata["outputs"]))
                outcome, detail = ("prepare-gap", said) if said else ("tflm-prepares", "")
            elif outcome == "compiled" and runner is not None:
                outcome, detail = runner.run(path, library)
                shutil.rmtree(work / "build", ignore_errors=True)
            counts[outcome] = counts.get(outcome, 0) + 1
            done += 1
            if outcome in failures:
                key = f"{outcome}: {detail[:80]}"
                if key not in seen:
                    seen[key] = i
                    print(f"[{i}] {outcome}: {detail}\n    model {model}, edits {notes}", flush=True)
                    if args.save_failing:
                        keep = Path(args.save_failing)
                        keep.mkdir(parents=True, exist_ok=True)
                        (keep / f"{outcome}-{i}.tflite").write_bytes(data)
            if not args.quiet and done % 250 == 0:
                print(f"{done} mutants, {time.monotonic() - start:.0f} s: {counts}", flush=True)
        if runner is not None:
            runner.close()
        if probe is not None:
            probe.close()
    failed = sum(n for k, n in counts.items() if k in failures)
    print(
        f"{done} structure-aware mutants in {time.monotonic() - start:.0f} s: "
        + ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
        + f"; {failed} failures"
    )
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=int(os.environ.get("MC_FUZZ_EXAMPLES", "1000")))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-corpus", action="store_true", help="keep one case per new failure in the corpus")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--structured", action="store_true", help="mutate the model's fields, not its bytes")
    ap.add_argument(
        "--run",
        action="store_true",
        help="with --structured: build each compiled mutant with ASan/UBSan, run it and compare with TFLM",
    )
    ap.add_argument(
        "--prepare-gaps",
        action="store_true",
        help="with --structured: load each mutant that compiles into TFLM (no build); one that TFLM's prepare "
        "step refuses is a failure (a check docs/prepare_checks.md lacks), printed with TFLM's message",
    )
    ap.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: no limit)")
    ap.add_argument("--save-failing", metavar="DIR", help="with --structured: keep each failing mutant's .tflite")
    ap.add_argument(
        "--seeds",
        metavar="TEXT[,TEXT...]",
        help="with --structured: only the seed models whose names contain one of these (e.g. Signal,CAST)",
    )
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    if args.structured:
        return structured(args)
    rng = random.Random(args.seed)
    names = seed_names()
    failures: dict[str, tuple[str, list[dict], str, int]] = {}
    counts = {"failed": 0}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="microcompiler-fuzz-") as tmp:
        for i in range(args.examples):
            model = rng.choice(names)
            data = seed_bytes(model)
            kind, raw = random_edits(rng, len(data))
            edits = materialize(data, raw)
            result = check(model, edits, Path(tmp))
            if result is not None:
                counts["failed"] += 1
                signature, message = result
                if signature not in failures:
                    failures[signature] = (model, edits, message, i)
                    print(
                        f"[{i}] {signature}: {message}\n    model {model}, {kind}, edits {json.dumps(edits)[:300]}",
                        flush=True,
                    )
            if not args.quiet and (i + 1) % 500 == 0:
                print(f"{i + 1} mutants, {counts['failed']} failures, {time.monotonic() - start:.0f} s", flush=True)
    if args.save_corpus:
        CORPUS_DIR.mkdir(parents=True, exist_ok=True)
        for model, edits, message, i in failures.values():
            case = {"model": model, "edits": edits, "found": f"seed {args.seed}, mutant {i}", "failure": message}
            digest = hashlib.sha1(json.dumps([model, edits]).encode()).hexdigest()[:10]
            (CORPUS_DIR / f"{Path(model).stem.replace(':', '_')}-{digest}.json").write_text(
                json.dumps(case, indent=1) + "\n"
            )
    print(
        f"{args.examples} mutants in {time.monotonic() - start:.0f} s: {counts['failed']} escaped "
        f"({len(failures)} distinct)"
    )
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
