/* An RPC server with a hand-written registry, for tests/test_rpc_*.py: functions with typed
 * arguments (tensors, int32 and float scalars), slow functions, a crashing one and a logging one.
 * Runs on the POSIX platform: RPC on stdin/stdout. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "microcompiler/platform.h"
#include "microcompiler/rpc_server.h"

static mc_rpc_server_t g_server;
static union {
  uint8_t bytes[16384 + MC_RPC_CALL_TABLE_BYTES(0u)]; /* 16 KB for ALLOC, then the call table */
  int64_t align;
} g_pool;

/* out[i] = (in[i] + k) * scale for i < count. args: in int32[], k int32, scale float, out float[], count int32 */
static void add_scale(void* const* args) {
  const int32_t* in = (const int32_t*)args[0];
  int32_t k = *(const int32_t*)args[1];
  float scale = *(const float*)args[2];
  float* out = (float*)args[3];
  int32_t count = *(const int32_t*)args[4], i;
  for (i = 0; i < count; ++i) out[i] = (float)(in[i] + k) * scale;
}

/* Adds 1 to the first byte of every argument (to count executions). */
static void increment(void* const* args) {
  int i;
  for (i = 0; i < MC_RPC_MAX_ARGS && args[i] != NULL; ++i) *(uint8_t*)args[i] += 1u;
}

/* Busy loop of *args[0] iterations (timing). */
static void spin(void* const* args) {
  volatile uint32_t sink = 0;
  int32_t n = *(const int32_t*)args[0], i;
  for (i = 0; i < n; ++i) sink += (uint32_t)i;
  (void)sink;
}

/* Sleeps *args[0] milliseconds (a long call: the host must wait for it). */
static void sleep_ms(void* const* args) {
  int32_t ms = *(const int32_t*)args[0];
  struct timespec t;
  t.tv_sec = ms / 1000;
  t.tv_nsec = (long)(ms % 1000) * 1000000L;
  nanosleep(&t, NULL);
}

static void say_hello(void* const* args) {
  (void)args;
  (void)mc_rpc_server_log(&g_server, "hello from the device");
}

static void crash(void* const* args) {
  (void)args;
  abort();
}

static const mc_op_entry_t g_entries[] = {
    {"add_scale", add_scale}, {"increment", increment}, {"spin", spin},
    {"sleep_ms", sleep_ms},   {"say_hello", say_hello}, {"crash", crash}};
static const mc_op_registry_t g_registry = {g_entries, sizeof(g_entries) / sizeof(g_entries[0]), 0u};

int main(void) {
  const mc_op_registry_t* registries[1];
  registries[0] = &g_registry;
  if (mc_platform_init() != MC_OK) return 1;
  if (mc_rpc_server_init(&g_server, registries, 1u, g_pool.bytes, sizeof(g_pool.bytes)) != MC_OK) return 1;
  (void)mc_rpc_server_announce(&g_server);
  (void)mc_rpc_server_serve(&g_server);
  return 0;
}
