"""MLPerf Tiny firmware projects: bare metal, with main() the EEMBC DUT protocol (docs/mlperf.md).

The project is the baremetal target's (CMakeLists.txt, linker script, toolchain file, runtime
copy, from project_templates/baremetal/) except src/main.c, rendered from
project_templates/mlperf/main.c.j2: it hands the UART to crt/src/mlperf_dut.c, configured for the
benchmark (``benchmark``: kws01, ic01, vww01 or ad01; recorded in microcompiler-project.json).
The official runner drives it: microcompiler.mlperf_runner, ``microcompiler mlperf``.
"""
from __future__ import annotations

from pathlib import Path

from microcompiler import resources
from microcompiler.boards import Board
from microcompiler.codegen import ModelLibrary
from microcompiler.errors import MicrocompilerError
from microcompiler.host import render_template
from microcompiler.mlperf import Benchmark, get_benchmark, template_values
from microcompiler.targets.base import STANDALONE, Log, Project, quiet, register
from microcompiler.targets.baremetal import BareMetal


@register
class MlperfTarget(BareMetal):
    name = "mlperf"
    template_folder = "baremetal"  # the build files; main.c.j2 comes from project_templates/mlperf
    options = ("benchmark",)
    _benchmark: Benchmark | None = None  # the benchmark of the project being created

    def create(self, model: str | Path | ModelLibrary, board: Board, out_dir: str | Path, *,
               executor: str = "aot", mode: str = STANDALONE, input=None, stack_bytes: int | None = None,
               log: Log = quiet, benchmark: str | None = None, input_steps=None) -> Project:
        chosen = get_benchmark(benchmark)
        if mode != STANDALONE or executor != "aot":
            raise MicrocompilerError("the mlperf template is its own main(): use it with the default --mode "
                                     "standalone and --executor aot")
        self._benchmark = chosen
        try:
            return super().create(model, board, out_dir, executor=executor, mode=mode, input=input,
                                  stack_bytes=stack_bytes, log=log, input_steps=input_steps)
        finally:
            self._benchmark = None

    def check_sequence(self, mode: str) -> None:
        raise MicrocompilerError("the mlperf template runs the EEMBC protocol's own inputs, not a sequence; use "
                                 "--template baremetal for a sequence of inputs")

    def project_info(self, board: Board) -> dict:
        assert self._benchmark is not None, "project_info outside create"
        return {"benchmark": self._benchmark.name}

    def fill(self, stage: Path, values: dict, stack_bytes: int) -> None:
        assert self._benchmark is not None, "fill outside create"
        model = {"name": values["name"], "inputs": values["inputs"], "outputs": values["outputs"]}
        dut = template_values(model, self._benchmark, values["board"].name)
        super().fill(stage, values, stack_bytes)
        (stage / "src" / "main.c").write_text(render_template(resources.templates_dir() / self.name, "main.c.j2",
                                                              **values, **dut))
