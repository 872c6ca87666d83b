"""`pip install .` (not editable) ships crt/, the project templates and the boards in the package."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_contains_runtime_templates_and_boards(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("microcompiler-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in [
        "crt/include/microcompiler/platform.h",
        "crt/include/microcompiler/kernel_math.h",
        "crt/src/graph_executor.c",
        "crt/platform/posix/platform.c",
        "project_templates/host/main.c.j2",
    ]:
        assert f"microcompiler/_data/{rel}" in names, rel
    assert any(n.startswith("microcompiler/_data/boards/") and n.endswith(".toml") for n in names)
    assert any(n.startswith("microcompiler/_data/project_templates/baremetal/") for n in names)
    assert any(n.startswith("microcompiler/ops/templates/") and n.endswith(".j2") for n in names)
    for fast_template in ("conv_2d_im2col.c.j2", "_requant.j2", "conv_2d_mve.c.j2"):  # beside their emitters
        assert f"microcompiler/ops/fast/{fast_template}" in names, fast_template
    assert any(n.endswith("entry_points.txt") for n in names)
