"""The tuning log: the fastest bit-exact knob setting per operator signature and CPU (docs/tuning.md).

A JSON file ``{"format": "microcompiler-tuning", "version": 1, "entries": [...]}``; each entry is
``{"cpu", "signature", "knobs", "ticks", "heuristic_ticks", "timer_hz", "board", "model",
"candidates"}``. ``compile/run/bench/create-project --tuning LOG`` look every operator's
signature up for the target's CPU and apply the entry's knobs; operators without an entry keep the
heuristic. A log of another version, or one that is not such a file, is refused with one line.
"""

from __future__ import annotations

import json
from pathlib import Path

from microcompiler.errors import MicrocompilerError
from microcompiler.ops.base import kernel_for
from microcompiler.tuning.signature import cpu_key, operator_signature, signature_key
from microcompiler.user_files import read_user_text

LOG_FORMAT = "microcompiler-tuning"
LOG_VERSION = 1
_ENTRY_FIELDS = ("cpu", "signature", "knobs")


class TuningLogError(MicrocompilerError):
    """A --tuning file that is not a tuning log this version of microcompiler reads."""


class TuningLog:
    """Entries keyed by (CPU, signature key)."""

    def __init__(self, entries: list[dict] | None = None):
        self.entries: dict[tuple[str, str], dict] = {}
        for entry in entries or []:
            self.add(entry)

    def add(self, entry: dict) -> None:
        self.entries[(entry["cpu"], signature_key(entry["signature"]))] = entry

    def lookup(self, cpu: str, signature: dict) -> dict | None:
        return self.entries.get((cpu, signature_key(signature)))

    def __len__(self) -> int:
        return len(self.entries)

    def for_cpu(self, cpu) -> CpuTuning:
        """What compile_model(tuning=...) takes: this log's entries for one CPU (``Board.cpu``)."""
        return CpuTuning(self, cpu)

    def to_json(self) -> dict:
        return {"format": LOG_FORMAT, "version": LOG_VERSION, "entries": list(self.entries.values())}

    def save(self, path: str | Path) -> Path:
        """Write the log (through a temporary file: a log is complete or not there)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> TuningLog:
        path = Path(path)
        text = read_user_text(path, "the tuning log", error=TuningLogError)
        try:
            data = json.loads(text)
        except ValueError:
            raise TuningLogError(
                f"the tuning log {path} is damaged (not JSON); run 'microcompiler tune' again to write a new one"
            ) from None
        if not isinstance(data, dict) or data.get("format") != LOG_FORMAT:
            raise TuningLogError(
                f'{path} is not a microcompiler tuning log (no "format": "{LOG_FORMAT}"); '
                "give the file 'microcompiler tune --output' wrote"
            )
        if data.get("version") != LOG_VERSION:
            raise TuningLogError(
                f"the tuning log {path} has version {data.get('version')!r}, this microcompiler "
                f"reads version {LOG_VERSION}; run 'microcompiler tune' again to write a new one"
            )
        entries = data.get("entries")
        if not isinstance(entries, list) or not all(_valid_entry(e) for e in entries):
            raise TuningLogError(
                f"the tuning log {path} is damaged (an entry lacks a cpu, signature or knobs); "
                "run 'microcompiler tune' again to write a new one"
            )
        return cls(entries)


class CpuTuning:
    """A tuning log applied to one CPU: ``knobs(graph)`` is compile_model's per-operator tuning."""

    def __init__(self, log: TuningLog, cpu):
        self.log = log
        self.cpu = cpu_key(cpu)
        self.applied: list[int] = []  # operator indices the last knobs() call found in the log

    def knobs(self, graph) -> dict:
        """{operator index: knobs} for the operators of a planned graph the log has an entry for."""
        tuning, self.applied = {}, []
        for op in graph.operators:
            entry = self.log.lookup(self.cpu, operator_signature(op, graph))
            if entry is None:
                continue
            _check_knobs(op, entry["knobs"])
            self.applied.append(op.index)
            if entry["knobs"]:
                tuning[op.index] = dict(entry["knobs"])
        return tuning


def _check_knobs(op, knobs: dict) -> None:
    """Refuse a knob the operator's kernel does not offer (a log from another microcompiler, or edited)."""
    offered = dict(kernel_for(op).tuning_knobs, variant=("reference",))
    for name, value in knobs.items():
        if value not in offered.get(name, ()):
            raise TuningLogError(
                f"the tuning log sets {name}={value!r} for {op.kind} (operator {op.index}), which "
                "its kernel does not offer; run 'microcompiler tune' again to write a new log"
            )


def _valid_entry(entry) -> bool:
    return (
        isinstance(entry, dict)
        and all(f in entry for f in _ENTRY_FIELDS)
        and isinstance(entry["cpu"], str)
        and isinstance(entry["signature"], dict)
        and isinstance(entry["knobs"], dict)
    )


def load_tuning(path: str | Path | None) -> TuningLog | None:
    """The log a --tuning option names (None without the option)."""
    return None if path is None else TuningLog.load(path)
