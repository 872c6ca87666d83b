"""The on-device graph executor refuses damaged descriptions and bad calls (C, built with ASan+UBSan)."""

import subprocess

from microcompiler.compiler import compile_model
from microcompiler.host import CRT_PORTABLE_SOURCES, SANITIZE_CFLAGS, STRICT_CFLAGS, compiler
from microcompiler.resources import crt_dir

CHECKS = r"""
#include <stdio.h>
#include <string.h>
#include "hello_world_int8_graph.h"
#include "microcompiler/status.h"

static union { uint8_t bytes[HELLO_WORLD_INT8_GRAPH_POOL_BYTES]; int64_t align; } pool;
static uint8_t damaged[4096];
static int failures;

static void expect(int ok, const char* what) {
  if (!ok) { printf("FAIL %s\n", what); ++failures; }
}

int main(void) {
  mc_graph_executor_t g;
  int8_t x = 5, y = 0;
  size_t n = hello_world_int8_graph_bytes, i;
  expect(mc_graph_init(&g, hello_world_int8_graph, n, &hello_world_int8_registry, pool.bytes,
                       sizeof(pool.bytes)) == MC_OK, "a good description initialises");
  expect(mc_graph_set_input(&g, 0, &x, 1) == MC_OK && mc_graph_run(&g) == MC_OK &&
         mc_graph_get_output(&g, 0, &y, 1) == MC_OK, "a good description runs");
  expect(mc_graph_set_input(&g, 0, &x, 2) == MC_ERR_INVALID_ARGUMENT, "wrong input size is refused");
  expect(mc_graph_set_input(&g, 1, &x, 1) == MC_ERR_INVALID_ARGUMENT, "input index out of range");
  expect(mc_graph_set_input(NULL, 0, &x, 1) == MC_ERR_INVALID_ARGUMENT, "a NULL executor");
  expect(mc_graph_get_output(NULL, 0, &y, 1) == MC_ERR_INVALID_ARGUMENT, "a NULL executor (output)");
  expect(mc_graph_run(NULL) == MC_ERR_INVALID_ARGUMENT, "run on a NULL executor");
  expect(mc_graph_init(&g, hello_world_int8_graph, n - 1, &hello_world_int8_registry, pool.bytes,
                       sizeof(pool.bytes)) == MC_ERR_BAD_GRAPH, "a truncated description");
  expect(mc_graph_init(&g, hello_world_int8_graph, n, &hello_world_int8_registry, pool.bytes,
                       sizeof(pool.bytes) - 1) == MC_ERR_OUT_OF_MEMORY, "a pool one byte too small");
  /* Every single-byte corruption is either refused or still runs within the pool (ASan checks). */
  for (i = 0; i < n && n <= sizeof(damaged); ++i) {
    memcpy(damaged, hello_world_int8_graph, n);
    damaged[i] ^= 0xFF;
    if (mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) == MC_OK)
      (void)mc_graph_run(&g);
  }
  memcpy(damaged, hello_world_int8_graph, n);
  damaged[0] = 'X';
  expect(mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) ==
         MC_ERR_BAD_GRAPH, "a wrong magic");
  printf("%d failures\n", failures);
  return failures != 0;
}
"""


def test_graph_executor_refuses_damage_and_bad_calls(shared_models, tmp_path):
    library = compile_model(shared_models / "tflm/hello_world_int8.tflite")
    lib_dir = tmp_path / "model"
    library.write(lib_dir)
    main = tmp_path / "checks.c"
    main.write_text(CHECKS)
    crt = crt_dir()
    exe = tmp_path / "checks"
    subprocess.run(
        [
            *compiler(),
            *STRICT_CFLAGS,
            *SANITIZE_CFLAGS,
            f"-I{lib_dir / 'include'}",
            f"-I{crt / 'include'}",
            str(main),
            *map(str, sorted((lib_dir / "src").glob("*.c"))),
            *(str(crt / s) for s in CRT_PORTABLE_SOURCES),
            str(crt / "platform/posix/platform.c"),
            "-o",
            str(exe),
            "-lm",
        ],
        check=True,
    )
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 failures" in proc.stdout
