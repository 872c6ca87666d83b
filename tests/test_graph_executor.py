"""The on-device graph executor refuses damaged descriptions and bad calls (C, built with ASan+UBSan):
every byte of the description set to several values, the variable-length operator records grown,
shrunk and cut, the pointer table (the pool's end) misaligned."""

import subprocess

from microcompiler.compiler import compile_model
from microcompiler.host import CRT_PORTABLE_SOURCES, SANITIZE_CFLAGS, STRICT_CFLAGS, compiler
from microcompiler.resources import crt_dir

CHECKS = r"""
#include <stdio.h>
#include <string.h>
#include "hello_world_int8_graph.h"
#include "microcompiler/status.h"

static union { uint8_t bytes[HELLO_WORLD_INT8_GRAPH_POOL_BYTES + 8]; int64_t align; } pool;
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
                       HELLO_WORLD_INT8_GRAPH_POOL_BYTES - 1) == MC_ERR_OUT_OF_MEMORY, "a pool one byte too small");
  /* Every byte set to other values is either refused or still runs within the pool (ASan checks). */
  for (i = 0; i < n && n <= sizeof(damaged); ++i) {
    static const uint8_t values[] = {0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF};
    size_t v;
    for (v = 0; v <= sizeof(values); ++v) {
      memcpy(damaged, hello_world_int8_graph, n);
      damaged[i] = v == sizeof(values) ? (uint8_t)(damaged[i] ^ 0xFF) : values[v];
      if (mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) == MC_OK)
        (void)mc_graph_run(&g);
      else
        expect(mc_graph_run(&g) == MC_ERR_INVALID_ARGUMENT, "a refused description does not run");
    }
  }
  memcpy(damaged, hello_world_int8_graph, n);
  damaged[0] = 'X';
  expect(mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) ==
         MC_ERR_BAD_GRAPH, "a wrong magic");
  {
    /* The first operator record: after the header, the slots and the input and output lists. */
    size_t first = 20u + 8u * (hello_world_int8_graph[4] | (hello_world_int8_graph[5] << 8)) +
                   2u * (hello_world_int8_graph[8] + hello_world_int8_graph[9]);
    size_t argc = hello_world_int8_graph[first + 2];
    expect(argc >= 1 && hello_world_int8_graph[10] == HELLO_WORLD_INT8_GRAPH_MAX_ARGS, "the record's count");
    memcpy(damaged, hello_world_int8_graph, n);
    damaged[first + 2] = (uint8_t)(argc + 1u); /* one slot more: the records no longer end at the names */
    damaged[10] = (uint8_t)(argc + 1u);
    expect(mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) ==
           MC_ERR_BAD_GRAPH, "a record one slot longer");
    memcpy(damaged, hello_world_int8_graph, n);
    damaged[first + 2] = (uint8_t)(argc - 1u);
    expect(mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) ==
           MC_ERR_BAD_GRAPH, "a record one slot shorter");
    memcpy(damaged, hello_world_int8_graph, n);
    damaged[10] = (uint8_t)(argc - 1u); /* max_args below a record's count */
    expect(mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) ==
           MC_ERR_BAD_GRAPH, "a record wider than max_args");
    memcpy(damaged, hello_world_int8_graph, n);
    damaged[first + 3] = 0x01; /* 256 more slots than there are bytes */
    expect(mc_graph_init(&g, damaged, n, &hello_world_int8_registry, pool.bytes, sizeof(pool.bytes)) ==
           MC_ERR_BAD_GRAPH, "a record past the end");
  }
  expect(mc_graph_init(&g, hello_world_int8_graph, n, &hello_world_int8_registry, pool.bytes + 1,
                       sizeof(pool.bytes) - 1) == MC_ERR_INVALID_ARGUMENT, "a pool not aligned for pointers");
  expect(mc_graph_run(&g) == MC_ERR_INVALID_ARGUMENT, "nor does it run after a refused init");
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
