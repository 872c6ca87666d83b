"""One self-contained HTML page (inline SVG, no network) for analyze, bench and validate."""
from microcompiler.report.page import render_report, write_report

__all__ = ["render_report", "write_report"]
