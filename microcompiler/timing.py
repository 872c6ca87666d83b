"""One vocabulary for time: instructions (or cycles) and the time they take at the board's clock.

Every command that shows a time (run, flash, bench, analyze, validate, tune, the HTML pages) goes
through here, so the same model on the same board reads the same everywhere:

* On an emulated board QEMU runs with ``-icount shift=0``: one guest instruction is one virtual
  nanosecond, so the device timer's ticks are an exact instruction count (``ticks * 1e9 /
  timer_hz``). The time shown is those instructions at the board's clock, one per cycle (the real
  chip takes more cycles per instruction where memory stalls; QEMU does not model them).
* On the host the timer is the real clock: the time shown is what it measured.
* On a hardware board the timer runs at the board's clock or a fraction of it: the time shown is
  ticks over the timer's frequency, and the cycles at the board's clock.
* ``analyze`` estimates instructions; shown the same way (at the board's clock, one per cycle).
"""

from __future__ import annotations

QEMU_INSTRUCTIONS_PER_SECOND = 1_000_000_000  # -icount shift=0: one instruction per virtual nanosecond


def format_duration(seconds: float) -> str:
    """An adaptive unit, three significant digits: ``812 ns``, ``19.9 µs``, ``124 ms``, ``2.51 s``."""
    if seconds != seconds or seconds < 0:  # NaN or negative: say so, never a made-up number
        return "unknown"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{_three_digits(seconds / scale)} {unit}"
    return f"{_three_digits(seconds / 1e-9)} ns"


def _three_digits(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def format_hz(hz: int) -> str:
    if hz >= 1_000_000_000 and hz % 1_000_000 == 0:
        return f"{hz / 1e9:g} GHz"
    if hz >= 1_000_000:
        return f"{hz / 1e6:g} MHz"
    return f"{hz / 1e3:g} kHz" if hz >= 1000 else f"{hz} Hz"


def measured(ticks: float, timer_hz: int, board) -> dict:
    """A device timer reading in the shared vocabulary: instructions where exact, seconds, and how."""
    if board.is_host:
        seconds = ticks / timer_hz if timer_hz else float("nan")
        return {"ticks": ticks, "timer_hz": timer_hz, "instructions": None, "seconds": seconds, "basis": "host clock"}
    if board.emulated:
        instructions = int(round(ticks * QEMU_INSTRUCTIONS_PER_SECOND / timer_hz)) if timer_hz else None
        clock = board.cpu.clock_hz
        if not clock:  # a board whose clock nothing gives: its instructions, and no time made up
            return {
                "ticks": ticks,
                "timer_hz": timer_hz,
                "instructions": instructions,
                "seconds": float("nan"),
                "basis": "QEMU -icount instructions (the board's clock is unknown)",
            }
        seconds = instructions / clock if instructions is not None else float("nan")
        return {
            "ticks": ticks,
            "timer_hz": timer_hz,
            "instructions": instructions,
            "seconds": seconds,
            "basis": f"QEMU -icount instructions at {format_hz(clock)}, one per cycle",
        }
    seconds = ticks / timer_hz if timer_hz else float("nan")
    return {
        "ticks": ticks,
        "timer_hz": timer_hz,
        "instructions": None,
        "seconds": seconds,
        "cycles": int(round(seconds * board.cpu.clock_hz)),
        "basis": f"device timer at {format_hz(timer_hz)}",
    }


def estimated(instructions: int, board) -> dict:
    """An estimated instruction count at the board's clock (analyze's cost model)."""
    if board is None or board.is_host or not board.cpu.clock_hz:
        return {"instructions": instructions, "seconds": None, "basis": "no board clock"}
    return {
        "instructions": instructions,
        "seconds": instructions / board.cpu.clock_hz,
        "basis": f"estimated instructions at {format_hz(board.cpu.clock_hz)}, one per cycle",
    }


def describe(time: dict) -> str:
    """``3,115,880 instructions (125 ms at 25 MHz, one per cycle)`` or ``19.9 µs (host clock)``."""
    if time.get("instructions") is not None:
        seconds = time.get("seconds")
        if seconds is None or seconds != seconds:  # none, or NaN: no clock to give a time at
            return f"{time['instructions']:,} instructions"
        basis = time["basis"].split(" at ", 1)[-1]
        return f"{time['instructions']:,} instructions ({format_duration(time['seconds'])} at {basis})"
    return f"{format_duration(time['seconds'])} ({time['basis']})"


def relative_error(estimate: float, measurement: float) -> float | None:
    """(estimate - measurement) / measurement, or None without a measurement."""
    return None if not measurement else (estimate - measurement) / measurement
