"""The version of microcompiler, written once: pyproject.toml reads it, ``microcompiler --version`` prints it,
``metadata.json`` records it (CHANGELOG.md says what changed)."""

__version__ = "0.1.0"
