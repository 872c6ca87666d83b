/* libFuzzer target for the RPC server: feeds arbitrary bytes to mc_rpc_server_receive().
 *
 * The first input byte picks how the rest is used:
 *   even: raw bytes straight into the frame decoder (fuzzes the framing layer);
 *   odd:  records of (length:u16 LE, payload) that this harness wraps into valid frames first,
 *         so the fuzzer reaches the message handlers without having to guess CRCs.
 * Every frame the server sends back must decode as a valid frame of at most MC_RPC_MAX_PAYLOAD
 * bytes; anything else aborts. The platform API is stubbed: writes go to that checker, the
 * timer counts calls, random is fixed.
 *
 * Build and run: see docs/rpc.md ("Fuzzing") and tests/test_rpc_fuzz.py. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "microcompiler/platform.h"
#include "microcompiler/rpc_framing.h"
#include "microcompiler/rpc_server.h"

/* ---- Platform stubs ---- */

static uint8_t g_check_buffer[MC_RPC_FRAME_CAPACITY];
static mc_rpc_decoder_t g_checker;
static uint64_t g_fake_time;

mc_status_t mc_platform_init(void) { return MC_OK; }
void mc_platform_abort(mc_status_t status) {
  (void)status;
  abort();
}

mc_status_t mc_platform_write(const uint8_t* data, size_t len) {
  size_t i;
  for (i = 0; i < len; ++i) {
    const uint8_t* payload;
    size_t payload_len;
    mc_rpc_decode_result_t result = mc_rpc_decoder_feed(&g_checker, data[i], &payload, &payload_len);
    if (result == MC_RPC_DECODE_DAMAGED) abort(); /* the server sent a malformed frame */
    if (result == MC_RPC_DECODE_FRAME && (payload_len < MC_RPC_REPLY_HEADER || payload_len > MC_RPC_MAX_PAYLOAD))
      abort();
  }
  return MC_OK;
}

mc_status_t mc_platform_read_byte(uint8_t* byte, uint32_t timeout_us) {
  (void)byte;
  (void)timeout_us;
  return MC_ERR_IO;
}

mc_status_t mc_platform_timer_start(void) {
  g_fake_time = 0;
  return MC_OK;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  *elapsed_ticks = ++g_fake_time;
  return MC_OK;
}

uint32_t mc_platform_timer_hz(void) { return 1000000u; }

mc_status_t mc_platform_random(uint8_t* buf, size_t len) {
  memset(buf, 0x5A, len);
  return MC_OK;
}

static mc_rpc_server_t g_server;

/* ---- Functions the fuzzer may call: each touches only the first byte of its arguments, which
 * the server guarantees lie inside an allocation (or a scalar slot). ---- */

static void fn_noop(void* const* args) { (void)args; }

static void fn_copy_first_byte(void* const* args) {
  if (args[0] != NULL && args[1] != NULL) *(uint8_t*)args[1] = *(const uint8_t*)args[0];
}

static void fn_increment_all(void* const* args) {
  size_t i;
  for (i = 0; i < g_server.max_args && args[i] != NULL; ++i) *(uint8_t*)args[i] += 1u;
}

static const mc_op_entry_t g_entries[] = {
    {"noop", fn_noop}, {"copy_first_byte", fn_copy_first_byte}, {"increment_all", fn_increment_all}};
static const mc_op_registry_t g_registry = {g_entries, 3u, 2u};
/* Wider than MC_RPC_MAX_ARGS: the server's call table (at the pool's end) grows to WIDE_ARGS. */
#define WIDE_ARGS 9u
static const mc_op_entry_t g_more_entries[] = {{"model_run", fn_increment_all}};
static const mc_op_registry_t g_more_registry = {g_more_entries, 1u, WIDE_ARGS};
static union {
  uint8_t bytes[2048];
  int64_t align;
} g_pool;

/* Wrap a payload into a frame (what a well-behaved host sends) and feed it to the server. */
static void feed_framed(const uint8_t* payload, size_t len) {
  static uint8_t frame[2 * (MC_RPC_MAX_PAYLOAD + MC_RPC_FRAME_OVERHEAD) + 2];
  uint8_t head[2], tail[2];
  size_t n = 0, i;
  uint16_t crc;
  head[0] = (uint8_t)len;
  head[1] = (uint8_t)(len >> 8);
  crc = mc_rpc_crc16(mc_rpc_crc16(0xFFFFu, head, 2), payload, len);
  tail[0] = (uint8_t)crc;
  tail[1] = (uint8_t)(crc >> 8);
  frame[n++] = MC_RPC_FLAG;
  for (i = 0; i < len + 4; ++i) {
    uint8_t b = i < 2 ? head[i] : i < len + 2 ? payload[i - 2] : tail[i - len - 2];
    if (b == MC_RPC_FLAG || b == MC_RPC_ESCAPE) {
      frame[n++] = MC_RPC_ESCAPE;
      frame[n++] = (uint8_t)(b ^ MC_RPC_ESCAPE_XOR);
    } else {
      frame[n++] = b;
    }
  }
  frame[n++] = MC_RPC_FLAG;
  mc_rpc_server_receive(&g_server, frame, n);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const mc_op_registry_t* registries[2] = {&g_registry, &g_more_registry};
  mc_rpc_decoder_init(&g_checker, g_check_buffer, sizeof(g_check_buffer));
  if (mc_rpc_server_init(&g_server, registries, 2u, g_pool.bytes, sizeof(g_pool.bytes)) != MC_OK) abort();
  /* ALLOC's memory ends where the call table of WIDE_ARGS arguments begins. */
  if (g_server.max_args != WIDE_ARGS || g_server.pool_bytes + MC_RPC_CALL_TABLE_BYTES(WIDE_ARGS) > sizeof(g_pool.bytes))
    abort();
  if (mc_rpc_server_announce(&g_server) != MC_OK) abort();
  if (size == 0) return 0;
  if ((data[0] & 1u) == 0) {
    mc_rpc_server_receive(&g_server, data + 1, size - 1);
  } else {
    size_t pos = 1;
    while (pos + 2 <= size) {
      size_t len = (size_t)data[pos] | ((size_t)data[pos + 1] << 8);
      pos += 2;
      if (len > size - pos) len = size - pos;
      if (len > MC_RPC_MAX_PAYLOAD) len = MC_RPC_MAX_PAYLOAD;
      feed_framed(data + pos, len);
      pos += len;
    }
  }
  (void)mc_rpc_server_log(&g_server, "end of input");
  return 0;
}
