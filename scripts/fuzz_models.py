#!/usr/bin/env python3
"""Compile mutated models and report every Python exception that is not a MicrocompilerError.

    python scripts/fuzz_models.py --examples 20000            # the long run (docs/reliability.md)
    python scripts/fuzz_models.py --examples 500 --seed 7 --save-corpus

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

from model_mutations import CORPUS_DIR, apply_edits, materialize, random_edits, seed_bytes, seed_names  # noqa: E402

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=int(os.environ.get("MC_FUZZ_EXAMPLES", "1000")))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-corpus", action="store_true", help="keep one case per new failure in the corpus")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
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
                    print(f"[{i}] {signature}: {message}\n    model {model}, {kind}, edits {json.dumps(edits)[:300]}",
                          flush=True)
            if not args.quiet and (i + 1) % 500 == 0:
                print(f"{i + 1} mutants, {counts['failed']} failures, {time.monotonic() - start:.0f} s", flush=True)
    if args.save_corpus:
        CORPUS_DIR.mkdir(parents=True, exist_ok=True)
        for model, edits, message, i in failures.values():
            case = {"model": model, "edits": edits, "found": f"seed {args.seed}, mutant {i}", "failure": message}
            digest = hashlib.sha1(json.dumps([model, edits]).encode()).hexdigest()[:10]
            (CORPUS_DIR / f"{Path(model).stem.replace(':', '_')}-{digest}.json").write_text(
                json.dumps(case, indent=1) + "\n")
    print(f"{args.examples} mutants in {time.monotonic() - start:.0f} s: {counts['failed']} escaped "
          f"({len(failures)} distinct)")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
