"""The version of microcompiler: the one place it is written (pyproject.toml reads it; CHANGELOG.md)."""

__version__ = "0.1.0"
