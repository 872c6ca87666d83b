"""One self-contained HTML page (inline SVG, no network) for analyze, bench and validate."""

from microcompiler.report.page import check_report_path, render_report, write_report

__all__ = ["check_report_path", "render_report", "write_report"]
