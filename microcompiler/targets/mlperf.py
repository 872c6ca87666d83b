"""MLPerf Tiny firmware projects: main() is the EEMBC DUT protocol (docs/mlperf.md).

Two templates, one firmware source:

- ``mlperf``: bare metal, the baremetal target's project (CMakeLists.txt, linker script, toolchain
  file, crt/platform/<family>, from project_templates/baremetal/);
- ``mlperf-zephyr``: a Zephyr application, the zephyr target's project (CMakeLists.txt, prj.conf,
  boards/, crt/platform/zephyr, from project_templates/zephyr/), for any board with a Zephyr board
  target.

Both render src/main.c from project_templates/mlperf/main.c.j2: it uses only the platform API and
hands the serial link to crt/src/mlperf_dut.c, configured for the benchmark (``benchmark``:
kws01, ic01, vww01 or ad01; recorded in microcompiler-project.json). The official runner drives
it: microcompiler.mlperf_runner, ``microcompiler mlperf``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from microcompiler import resources
from microcompiler.boards import Board
from microcompiler.codegen import ModelLibrary
from microcompiler.errors import MicrocompilerError
from microcompiler.host import render_template, runner_model
from microcompiler.mlperf import Benchmark, get_benchmark, template_values
from microcompiler.targets.baremetal import BareMetal
from microcompiler.targets.base import STANDALONE, Log, Project, RunResult, Target, quiet, read_project_info, register
from microcompiler.targets.zephyr import Zephyr

MAIN_TEMPLATE_FOLDER = "mlperf"  # project_templates/mlperf/main.c.j2, for every variant


class MlperfFirmware(Target):
    """What the MLPerf variants add to their base target: the benchmark option and the DUT main()."""

    options: ClassVar[tuple[str, ...]] = ("benchmark",)
    several_models = False  # the EEMBC protocol serves one model
    _benchmark: Benchmark | None = None  # the benchmark of the project being created

    def create(
        self,
        model: str | Path | ModelLibrary,
        board: Board,
        out_dir: str | Path,
        *,
        executor: str = "aot",
        mode: str = STANDALONE,
        input=None,
        stack_bytes: int | None = None,
        log: Log = quiet,
        benchmark: str | None = None,
        input_steps=None,
        **options,
    ) -> Project:
        chosen = get_benchmark(benchmark)
        if mode != STANDALONE or executor != "aot":
            raise MicrocompilerError(
                f"the {self.name} template is its own main(): use it with the default --mode "
                "standalone and --executor aot"
            )
        self._benchmark = chosen
        try:
            return super().create(
                model,
                board,
                out_dir,
                executor=executor,
                mode=mode,
                input=input,
                stack_bytes=stack_bytes,
                log=log,
                input_steps=input_steps,
                **options,  # the base target's own (mlperf-zephyr: zephyr_base)
            )
        finally:
            self._benchmark = None

    def check_sequence(self, mode: str) -> None:
        raise MicrocompilerError(
            "the mlperf template runs the EEMBC protocol's own inputs, not a sequence; use "
            "--template baremetal for a sequence of inputs"
        )

    def project_info(self, board: Board) -> dict:
        assert self._benchmark is not None, "project_info outside create"
        return {**super().project_info(board), "benchmark": self._benchmark.name}

    def console_use(self, mode: str) -> str:
        return "MLPerf Tiny DUT protocol (crt/src/mlperf_dut.c)"

    def flash(
        self, project: Project, *, timeout: float = 300.0, log: Log = print, port: str | None = None
    ) -> RunResult:
        """DUT firmware waits for the benchmark runner's commands and prints no report of its own."""
        raise MicrocompilerError(
            f"{project.dir} is MLPerf Tiny DUT firmware: it waits for the benchmark runner's "
            "commands and reports nothing by itself; run the benchmark with 'microcompiler "
            f"mlperf MODEL --board {project.board.name} --benchmark "
            f"{read_project_info(project.dir).get('benchmark', 'NAME')}' (docs/mlperf.md)"
        )

    def reports_stack(self, mode: str) -> bool:
        return False

    def fill(self, stage: Path, values: dict, stack_bytes: int) -> None:
        assert self._benchmark is not None, "fill outside create"
        dut = template_values(values["model_info"], self._benchmark, values["board"].name)
        values = dict(values, models=[runner_model(values["model_info"])])  # the input: a buffer the protocol fills
        super().fill(stage, values, stack_bytes)
        main = render_template(resources.templates_dir() / MAIN_TEMPLATE_FOLDER, "main.c.j2", **values, **dut)
        (stage / "src" / "main.c").write_text(main)


@register
class MlperfTarget(MlperfFirmware, BareMetal):
    name = "mlperf"
    template_folder = "baremetal"  # the build files; main.c.j2 comes from project_templates/mlperf


@register
class MlperfZephyrTarget(MlperfFirmware, Zephyr):
    name = "mlperf-zephyr"
    options = ("benchmark", "zephyr_base")
    template_folder = "zephyr"  # the Zephyr application files; main.c.j2 comes from project_templates/mlperf
