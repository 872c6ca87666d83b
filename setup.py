"""Copies crt/, project_templates/ and boards/ into the package when building a wheel.

Everything else is configured in pyproject.toml. In a source checkout the folders are found in
place (microcompiler/resources.py), so an editable install needs no copy.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_FOLDERS = ["crt", "project_templates", "boards"]


class BuildWithData(build_py):
    def run(self):
        super().run()
        root = Path(__file__).resolve().parent
        for folder in DATA_FOLDERS:
            target = Path(self.build_lib) / "microcompiler" / "_data" / folder
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(root / folder, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithData})
