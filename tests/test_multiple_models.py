"""Several models in one firmware (docs/multiple_models.md): one project that runs two models on
mps2_an386, each bit-exact with TFLM; no clashing symbols; a shared arena that saves the smaller
arena and is refused when the models could overlap; host-driven execution that picks a model by
name; and two libraries compiled separately that link into one program."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from board_oracle import needs_board_tools
from oracle import Oracle

from microcompiler.api import connect
from microcompiler.errors import DeviceError, MicrocompilerError
from microcompiler.project import Project, build, flash
from microcompiler.rpc.plan import ModelPlan
from microcompiler.targets import create_models_project
from microcompiler.targets.multi import SHARED_ARENA, check_no_state, compile_models
from microcompiler.targets.toolchain import firmware_size

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "examples" / "tiny_cnn" / "tiny_cnn_int8.tflite"
BOARD = "mps2_an386"


@pytest.fixture(scope="module")
def models(shared_models) -> list[Path]:
    return [TINY, shared_models / "mlperf_tiny" / "ad01_int8.tflite"]


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


def built_project(tmp: Path, models: list[Path], *options) -> tuple[Project, object]:
    args = [a for m in models for a in ("--model", m)]
    proc = cli("create-project", *args, "--board", BOARD, "-o", tmp, *options)
    assert proc.returncode == 0, proc.stderr
    return Project.load(tmp), build(tmp, log=lambda _: None)


def assert_bit_exact(project: Project, result, models: list[Path]) -> None:
    assert list(result.models) == [m["name"] for m in project.models]
    for meta, path in zip(project.models, models):
        got = result.models[meta["name"]].outputs
        want = Oracle(path.read_bytes()).run(project.saved_inputs(meta["name"]))
        assert len(got) == len(want) == len(meta["outputs"])
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == np.int8 and np.array_equal(g, np.asarray(w).reshape(g.shape)), (
                f"{meta['name']} output {k}: {g.ravel()[:8]} vs TFLM {np.asarray(w).ravel()[:8]}"
            )


def global_symbols(objects: list[Path], nm: str = "nm") -> dict[str, str]:
    """Defined global symbol -> the object defining it (asserting none is defined twice)."""
    found: dict[str, str] = {}
    for obj in objects:
        out = subprocess.run(
            [nm, "-g", "--defined-only", str(obj)], capture_output=True, text=True, check=True, timeout=60
        ).stdout
        for line in out.splitlines():
            symbol = line.split()[-1]
            assert symbol not in found, f"{symbol} is defined by both {found[symbol]} and {obj.name}"
            found[symbol] = obj.name
    return found


def symbol_sizes(elf: Path) -> dict[str, int]:
    out = subprocess.run(
        ["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return {f[3]: int(f[1], 16) for f in (line.split() for line in out.splitlines()) if len(f) == 4}


@pytest.fixture(scope="module")
def plain(tmp_path_factory, models):
    project, built = built_project(tmp_path_factory.mktemp("multi") / "plain", models)
    return project, built, flash(project.dir, log=lambda _: None)


@needs_board_tools
def test_two_models_in_one_firmware_each_bit_exact(plain, models):
    project, built, result = plain
    assert [m["name"] for m in project.models] == ["tiny_cnn_int8", "ad01_int8"]
    assert_bit_exact(project, result, models)
    assert all(r.ticks > 0 for r in result.models.values())


@needs_board_tools
def test_every_global_symbol_of_a_model_carries_its_name(plain):
    project, built, _ = plain
    objects = sorted((project.dir / "build").rglob("*.obj"))
    assert objects
    symbols = global_symbols(objects, "arm-none-eabi-nm")
    for meta in project.models:
        name = meta["name"]
        mine = {s for s, obj in symbols.items() if obj.startswith(f"{name}_")}
        assert mine and all(s.startswith(name + "_") for s in mine), sorted(mine)
    # and the arenas, scratch buffers and weights stay inside their files (static)
    sizes = symbol_sizes(built.elf)
    assert {"tiny_cnn_int8_arena", "ad01_int8_arena"} <= set(sizes) and SHARED_ARENA not in sizes


@needs_board_tools
def test_shared_arena_saves_the_smaller_arena(plain, models, tmp_path):
    project, built, _ = plain
    shared, shared_built = built_project(tmp_path / "shared", models, "--share-arena")
    assert shared.share_arena
    assert_bit_exact(shared, flash(shared.dir, log=lambda _: None), models)
    arenas = [m["arena_bytes"] for m in project.models]
    smaller = -(-min(arenas) // 8) * 8  # each arena is a whole number of int64_t
    own, one = symbol_sizes(built.elf), symbol_sizes(shared_built.elf)
    assert one[SHARED_ARENA] == -(-max(arenas) // 8) * 8
    assert own["tiny_cnn_int8_arena"] + own["ad01_int8_arena"] - one[SHARED_ARENA] == smaller
    assert "tiny_cnn_int8_arena" not in one and "ad01_int8_arena" not in one
    # the whole RAM drops by as much, give or take the padding that aligns the 8-byte arena in .bss
    assert firmware_size(built.elf)[1] - firmware_size(shared_built.elf)[1] > smaller - 8


@needs_board_tools
def test_graph_executor_models_share_one_pool(models, tmp_path):
    project, built = built_project(tmp_path / "graph", models, "--executor", "graph", "--share-arena")
    assert_bit_exact(project, flash(project.dir, log=lambda _: None), models)
    pools = []
    for meta in project.models:
        header = (project.dir / "models" / meta["name"] / "include" / f"{meta['name']}_graph.h").read_text()
        pools.append(int(header.split(f"{meta['name'].upper()}_GRAPH_POOL_BYTES ")[1].split()[0]))
    assert symbol_sizes(built.elf)["g_pool"] == max(pools) < sum(pools)


@needs_board_tools
def test_host_driven_picks_each_model_by_name(models, tmp_path):
    project_dir = tmp_path / "hd"
    project, _ = built_project(project_dir, models, "--mode", "host-driven")
    result = flash(project_dir, log=lambda _: None)  # drives each model, picked by name, over RPC
    assert_bit_exact(project, result, models)
    with connect(project_dir, model="ad01_int8") as session:
        assert session.model_fingerprint("ad01_int8") == int(project.models[1]["fingerprint"], 16)
        assert session.model_fingerprint("no_such_model") is None
        assert session.device.model_fingerprint == int(project.models[0]["fingerprint"], 16)
        with session.executor() as ex:
            got = ex(*project.saved_inputs("ad01_int8"))
        want = Oracle(models[1].read_bytes()).run(project.saved_inputs("ad01_int8"))
        assert np.array_equal(got[0], np.asarray(want[0]).reshape(got[0].shape))
        stranger = ModelPlan.load(project_dir / "models" / "ad01_int8")
        stranger.metadata = {**stranger.metadata, "name": "kws", "fingerprint": "0123456789abcdef"}
        with pytest.raises(DeviceError, match="another model"):
            session.executor(stranger)
    with pytest.raises(MicrocompilerError, match="no model named 'kws'"):
        connect(project_dir, model="kws")


SHARED_ARENA_DEFINITION = """#define MAX(a, b) ((a) > (b) ? (a) : (b))
int64_t mc_shared_arena[(MAX(KWS_ARENA_BYTES, ANOMALY_ARENA_BYTES) + 7) / 8];
"""


@pytest.mark.parametrize("shared", [False, True], ids=["own_arenas", "shared_arena"])
def test_separately_compiled_libraries_link_into_one_program(models, tmp_path, shared):
    names = ["kws", "anomaly"]
    for name, model in zip(names, models):
        proc = cli("compile", model, "--name", name, "-o", tmp_path / name, *(["--shared-arena"] if shared else []))
        assert proc.returncode == 0, proc.stderr
    main = tmp_path / "main.c"
    main.write_text(
        """#include <stdio.h>
#include "kws.h"
#include "anomaly.h"
"""
        + (SHARED_ARENA_DEFINITION if shared else "")
        + """static int8_t kws_in[KWS_INPUT0_BYTES], kws_out[KWS_OUTPUT0_BYTES];
static int8_t anomaly_in[ANOMALY_INPUT0_BYTES], anomaly_out[ANOMALY_OUTPUT0_BYTES];
int main(void) {
  if (fread(kws_in, 1, sizeof(kws_in), stdin) != sizeof(kws_in)) return 2;
  if (fread(anomaly_in, 1, sizeof(anomaly_in), stdin) != sizeof(anomaly_in)) return 2;
  if (kws_run(kws_in, kws_out) != 0 || anomaly_run(anomaly_in, anomaly_out) != 0) return 3;
  fwrite(kws_out, 1, sizeof(kws_out), stdout);
  fwrite(anomaly_out, 1, sizeof(anomaly_out), stdout);
  return 0;
}
"""
    )
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic"]
    sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"] if shared else []
    includes = [f"-I{tmp_path / n / 'include'}" for n in names]
    objects = []
    for source in [main, *sorted(tmp_path.glob("*/src/*.c"))]:
        obj = tmp_path / f"{source.stem}.o"
        subprocess.run(["cc", *flags, *sanitize, *includes, "-c", str(source), "-o", str(obj)], check=True, timeout=300)
        objects.append(obj)
    symbols = global_symbols(objects)  # no symbol defined twice
    for name in names:
        assert {f"{name}_run", f"{name}_registry", f"{name}_graph"} <= set(symbols)
    assert (symbols.get("mc_shared_arena") == "main.o") == shared
    exe = tmp_path / "both"
    subprocess.run(["cc", *sanitize, *map(str, objects), "-o", str(exe), "-lm"], check=True, timeout=300)
    metas = [json.loads((tmp_path / n / "metadata.json").read_text()) for n in names]
    rng = np.random.default_rng(7)
    inputs = [rng.integers(-128, 128, size=m["inputs"][0]["shape"], dtype=np.int8) for m in metas]
    run = subprocess.run(
        [str(exe)], input=b"".join(x.tobytes() for x in inputs), capture_output=True, timeout=60, check=True
    )
    kws_bytes = metas[0]["outputs"][0]["bytes"]
    got = [np.frombuffer(run.stdout[:kws_bytes], np.int8), np.frombuffer(run.stdout[kws_bytes:], np.int8)]
    for model, x, g in zip(models, inputs, got):
        want = np.asarray(Oracle(model.read_bytes()).run([x])[0]).ravel()
        assert np.array_equal(g, want), f"{model.name}: {g[:8]} vs TFLM {want[:8]}"
    if shutil.which("arm-none-eabi-gcc"):  # the same libraries for the board's CPU: still no clash
        arm = []
        for source in sorted(tmp_path.glob("*/src/*.c")):
            obj = tmp_path / f"{source.stem}.arm.o"
            subprocess.run(
                [
                    "arm-none-eabi-gcc",
                    "-mcpu=cortex-m4",
                    "-mthumb",
                    *flags,
                    *includes,
                    "-c",
                    str(source),
                    "-o",
                    str(obj),
                ],
                check=True,
                timeout=300,
            )
            arm.append(obj)
        ours = {s for s in symbols if not s.startswith("__")} - {"main", "mc_shared_arena"}  # not ASan's
        assert set(global_symbols(arm, "arm-none-eabi-nm")) == ours


@pytest.mark.parametrize(
    "options, message",
    [
        (["--share-arena", "--concurrent"], "--concurrent says they may"),
        (["--share-arena", "--mode", "host-driven"], "the host decides when each model runs"),
        (["--name", "kws", "--name", "kws"], "are both named 'kws'"),
        (["--name", "kws", "--name", "KWS"], "are both named"),
        (["--name", "kws", "--name", "kws_net"], "'kws' is a prefix of 'kws_net'"),
        (["--name", "kws"], "2 models but 1 --name"),
        (["--name", "kws", "--name", "2nd"], "is not a C identifier"),
        (["--input", "x.npy"], "--input takes one model"),
        (["--template", "mlperf"], "--template mlperf runs one model; for several use --template baremetal, zephyr"),
    ],
)
def test_models_that_could_clash_or_overlap_are_refused_in_one_line(options, message, tmp_path):
    proc = cli("create-project", "--model", TINY, "--model", TINY, "--board", BOARD, "-o", tmp_path / "p", *options)
    assert proc.returncode != 0 and message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "p").exists()


def test_the_same_file_twice_needs_two_names(tmp_path):
    proc = cli("create-project", "--model", TINY, "--model", TINY, "--board", BOARD, "-o", tmp_path / "p")
    assert proc.returncode != 0 and "give each its own C name with --name" in proc.stderr
    proc = cli(
        "create-project",
        "--model",
        TINY,
        "--name",
        "wake",
        "--model",
        TINY,
        "--name",
        "command",
        "--board",
        BOARD,
        "-o",
        tmp_path / "p",
    )
    assert proc.returncode == 0, proc.stderr
    project = Project.load(tmp_path / "p")
    assert [m["name"] for m in project.models] == ["wake", "command"]
    assert (tmp_path / "p" / "models" / "command" / "include" / "command.h").is_file()


def test_a_model_with_state_cannot_share_the_arena(models):
    from microcompiler.boards import load_board

    libraries = compile_models([TINY, models[1]], None, load_board(BOARD), share_arena=True)
    check_no_state(libraries)  # stateless models may share
    libraries[1].metadata["state_bytes"] = 64  # as a model with variable tensors reports it
    with pytest.raises(MicrocompilerError, match="ad01_int8 keeps state between inferences"):
        check_no_state(libraries)


def test_zephyr_project_runs_every_model(models, tmp_path):
    """Zephyr projects are written from Zephyr's sources; west is not installable here to build them."""
    project = create_models_project(models, "zephyr", "mps2_an385", tmp_path / "z", share_arena=True)
    main = (project.dir / "src" / "main.c").read_text()
    cmake = (project.dir / "CMakeLists.txt").read_text()
    # every model's runner in main.c (project_templates/models/runners.c.j2), as for one model
    assert "mc_runner_run_all(g_models, MODEL_COUNT, MODEL_STEPS, " in main and "k_sleep" in main
    assert "#define MODEL_COUNT 2u" in main and '"tiny_cnn_int8"}' in main and '"ad01_int8"}' in main
    assert "tiny_cnn_int8_run(" in main and "ad01_int8_run(" in main and f"int64_t {SHARED_ARENA}[" in main
    assert "models/tiny_cnn_int8/include models/ad01_int8/include" in cmake and "src/models.c" not in cmake
    assert not (project.dir / "src" / "models.c").exists()
    served = create_models_project(models, "zephyr", "mps2_an385", tmp_path / "zr", mode="host-driven")
    server = (served.dir / "src" / "main.c").read_text()  # project_templates/models/rpc_server.c.j2
    assert "serve_models(" in server and "(Zephyr)" in server and not (served.dir / "src" / "models.c").exists()
    assert all(
        f'mc_rpc_server_add_model(&g_server, "{m["name"]}", {m["name"].upper()}_FINGERPRINT)' in server
        and f'{{"{m["name"]}_reset", {m["name"]}_reset_entry}}' in server
        for m in served.models
    )
    assert (served.dir / "models" / "ad01_int8" / "host_driven.json").is_file()


def test_model_request_names_no_model_on_a_server_without_models(tmp_path):
    from rpc_support import build_test_server, start_server

    from microcompiler.rpc import protocol as P
    from microcompiler.rpc.client import Session

    with Session(start_server(build_test_server(tmp_path)), timeout=3.0) as session:
        assert session.device.model_fingerprint == 0 and session.device.version == P.VERSION == 3
        assert session.model_fingerprint("kws") is None
        assert session._request(P.MODEL, b"").status == 8  # MC_ERR_PROTOCOL: a MODEL request needs a name
        assert session.ping(b"still serving") == b"still serving"


def test_run_compiles_the_model_under_the_name_given():
    proc = cli("run", TINY, "--name", "wake", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"] == "wake"


def _zephyr_program(project: Project, exe: Path) -> Path:
    """The whole Zephyr application as its CMakeLists.txt and Kconfig have it, strict flags, ASan and
    UBSan, over the fake Zephyr API of tests/data/zephyr_stub (west cannot be installed here)."""
    from test_mlperf_zephyr import FAKE_ZEPHYR, _compile, _kconfig_defines

    d = project.dir
    cmake = (d / "CMakeLists.txt").read_text()
    sources = [d / s for s in re.findall(r"^\s+((?:models|crt|src)/\S+\.c)$", cmake, re.M)]
    defines = _kconfig_defines(d, project.board) + re.findall(r"target_compile_definitions\(app PRIVATE (\S+)\)", cmake)
    includes = [
        FAKE_ZEPHYR,
        d / "crt" / "include",
        d / "crt" / "platform" / "zephyr",
        d / "src",
        *(d / "models" / m["name"] / "include" for m in project.models),
    ]
    return _compile(sources, [f if f.startswith("-D") else f"-D{f}" for f in defines], includes, exe)


def test_zephyr_application_runs_and_serves_every_model_over_a_fake_zephyr(models, tmp_path):
    from microcompiler.rpc.client import Session
    from microcompiler.standalone import model_report
    from microcompiler.targets.base import decode_report
    from microcompiler.transport.subprocess import SubprocessTransport

    project = create_models_project(models, "zephyr", "mps2_an385", tmp_path / "z", share_arena=True)
    exe = _zephyr_program(project, tmp_path / "standalone")
    proc = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in proc.stdout:  # it reports again and again: the first whole report is enough
            lines.append(line)
            if line.startswith("MC-END"):
                break
    finally:
        proc.kill()
        proc.wait(timeout=30)
    text = "".join(lines)
    for meta, path in zip(project.model_infos, models):
        got = decode_report(model_report(text, meta.name), meta).outputs[0]
        want = Oracle(path.read_bytes()).run(project.saved_inputs(meta.name))[0]
        assert np.array_equal(got, np.asarray(want).reshape(got.shape)), meta.name
    served = create_models_project(models, "zephyr", "mps2_an385", tmp_path / "zr", mode="host-driven")
    exe = _zephyr_program(served, tmp_path / "served")
    for meta, path in zip(served.models, models):
        plan = ModelPlan.load(served.dir / "models" / meta["name"])
        with Session(SubprocessTransport([str(exe)]), timeout=10.0, plan=plan) as session:
            with session.executor() as ex:
                got = ex(*served.saved_inputs(meta["name"]))[0]
        want = Oracle(path.read_bytes()).run(served.saved_inputs(meta["name"]))[0]
        assert np.array_equal(got, np.asarray(want).reshape(got.shape)), meta["name"]
