"""Where the files that ship with microcompiler live: crt/, project_templates/ and boards/.

In a source checkout they are the top-level folders beside the package; in an installed package
(``pip install .``) they are copied inside it as ``microcompiler/_data/<folder>``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(folder: str) -> Path:
    for candidate in (_PACKAGE / "_data" / folder, _PACKAGE.parent / folder):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"microcompiler is missing its {folder}/ folder; reinstall it with 'pip install .'")


def crt_dir() -> Path:
    return data_dir("crt")


def crt_file(rel: str) -> Path:
    return crt_dir() / rel


def templates_dir() -> Path:
    return data_dir("project_templates")


def boards_dir() -> Path:
    return data_dir("boards")
