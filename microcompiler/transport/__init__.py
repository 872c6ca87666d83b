"""Byte links to a device: a serial port, or the emulated UART of a QEMU board.

``Transport`` (base.py) is the interface; the standalone report reader and, later, RPC use only it.
"""

from microcompiler.transport.base import Transport

__all__ = ["Transport"]
