"""``compile --zephyr-module``: a model library that is also a Zephyr module.

Zephyr applications take libraries as modules (TFLM and CMSIS-NN ship that way): a directory with
``zephyr/module.yml`` that a west manifest or ``ZEPHYR_EXTRA_MODULES`` names. Besides the model
library (``src/``, ``include/``, ``metadata.json``) this writes, from project_templates/zephyr_module::

    DIR/zephyr/module.yml       the module: name microcompiler_<model>, its CMake and Kconfig
    DIR/zephyr/CMakeLists.txt   the model (CONFIG_MICROCOMPILER_<MODEL>), the runtime
                                (CONFIG_MICROCOMPILER_RUNTIME), Zephyr's platform hooks
                                (CONFIG_MICROCOMPILER_PLATFORM)
    DIR/zephyr/Kconfig          those options
    DIR/crt/                    the runtime's headers and sources, and crt/platform/zephyr

See docs/zephyr.md, "Use a compiled model in your existing Zephyr application".
"""

from __future__ import annotations

from pathlib import Path

from microcompiler import resources
from microcompiler.host import render_template
from microcompiler.targets.files import copy_runtime
from microcompiler.targets.zephyr import RX_BUFFER_BYTES

TEMPLATE_FOLDER = "zephyr_module"
# crt sources that need a generated main of their own (the MLPerf Tiny DUT's): shipped, not built
MODEL_SPECIFIC_RUNTIME = {"mlperf_dut.c"}


def write_zephyr_module(directory: Path, name: str) -> None:
    """Add the Zephyr module's files to the model library ``name`` written in ``directory``."""
    copy_runtime(directory, "zephyr")
    template_dir = resources.templates_dir() / TEMPLATE_FOLDER
    values = dict(
        name=name,
        NAME=name.upper(),
        rx_buffer_bytes=RX_BUFFER_BYTES,
        model_sources=sorted(p.relative_to(directory).as_posix() for p in directory.glob("src/*.c")),
        runtime_sources=sorted(
            p.relative_to(directory).as_posix()
            for p in directory.glob("crt/src/*.c")
            if p.name not in MODEL_SPECIFIC_RUNTIME
        ),
    )
    (directory / "zephyr").mkdir()
    for template, target in (
        ("module.yml.j2", "module.yml"),
        ("CMakeLists.txt.j2", "CMakeLists.txt"),
        ("Kconfig.j2", "Kconfig"),
    ):
        (directory / "zephyr" / target).write_text(render_template(template_dir, template, **values))
