"""SerialTransport: a serial port through pyserial, named by path or found by USB VID:PID."""

from __future__ import annotations

from microcompiler.errors import DeviceError, ToolchainError
from microcompiler.transport.base import Transport

DEFAULT_BAUD = 115200


def _pyserial():
    try:
        import serial
        import serial.tools.list_ports  # noqa: F401
    except ImportError:
        raise ToolchainError("pyserial is not installed; run 'pip install pyserial'") from None
    return serial


def _parse_usb_id(usb_id: str) -> tuple[int, int]:
    try:
        vid, pid = usb_id.split(":")
        return int(vid, 16), int(pid, 16)
    except ValueError:
        raise DeviceError(f"bad USB id '{usb_id}'; write it as VID:PID in hex, e.g. 0483:374b") from None


AUTO = "auto"  # --port auto: the port whose USB VID:PID is the board's


def find_port(usb_ids: list[str] | tuple[str, ...]) -> str:
    """The device path of the one serial port whose USB VID:PID is one of usb_ids (one-line errors
    when there is none, or several: then the user names it)."""
    serial = _pyserial()
    wanted = [_parse_usb_id(u) for u in usb_ids]
    ports = list(serial.tools.list_ports.comports())
    found = sorted({port.device for port in ports if (port.vid, port.pid) in wanted})
    if len(found) == 1:
        return found[0]
    if found:
        raise DeviceError(
            f"{len(found)} serial ports have the board's USB id ({' or '.join(usb_ids)}): {', '.join(found)}; "
            f"unplug the others or name one with --port, e.g. --port {found[0]}"
        )
    seen = (
        ", ".join(f"{p.device} ({p.vid:04x}:{p.pid:04x})" if p.vid is not None else p.device for p in ports) or "none"
    )
    raise DeviceError(
        f"no serial port with USB id {' or '.join(usb_ids)}; is the board plugged in? Serial ports seen: {seen}"
    )


class SerialTransport(Transport):
    """A serial port: ``SerialTransport("/dev/ttyACM0")`` or ``SerialTransport(usb_ids=["0483:374b"])``."""

    def __init__(
        self, port: str | None = None, *, usb_ids: list[str] | tuple[str, ...] = (), baudrate: int = DEFAULT_BAUD
    ):
        serial = _pyserial()
        if port is None:
            if not usb_ids:
                raise DeviceError("give a serial port path or the board's USB VID:PID")
            port = find_port(usb_ids)
        self.port = port
        try:
            self._serial = serial.Serial(port, baudrate=baudrate, timeout=0, write_timeout=10)
        except (serial.SerialException, OSError) as exc:
            reason = "no such device" if "No such file" in str(exc) else str(exc)
            raise DeviceError(
                f"cannot open serial port {port} ({reason}); check the board is plugged in and "
                "pass its port, listed by 'python -m serial.tools.list_ports'"
            ) from None
        self._error = serial.SerialException

    def write(self, data: bytes) -> None:
        try:
            self._serial.write(data)
            self._serial.flush()
        except (self._error, OSError) as exc:
            raise DeviceError(f"writing to {self.port} failed: {exc}") from None

    def read(self, n: int, timeout: float) -> bytes:
        try:
            self._serial.timeout = max(0.0, timeout)
            return bytes(self._serial.read(n))
        except (self._error, OSError) as exc:
            raise DeviceError(f"reading from {self.port} failed: {exc}") from None

    def pending(self) -> int:
        try:
            return self._serial.in_waiting
        except (self._error, OSError):
            return 0

    def close(self) -> None:
        if self._serial.is_open:
            self._serial.close()
