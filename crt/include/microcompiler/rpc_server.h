/* The on-device RPC server: lets a host look up and call operator functions,
 * manage device memory and time functions over a byte stream.
 *
 * Protocol: docs/rpc.md (framing in microcompiler/rpc_framing.h). The server
 * uses only the platform API for I/O and timing, allocates nothing (all
 * buffers are sized by the MC_RPC_* macros below, device memory comes from a
 * static pool the caller provides), and never disables interrupts. Every
 * field of every message is checked before use, so any byte sequence is safe.
 *
 *   static mc_rpc_server_t server;  (large: keep it static, not on the stack)
 *   mc_rpc_server_init(&server, registries, 1, pool, sizeof(pool));
 *   mc_rpc_server_announce(&server);
 *   mc_rpc_server_serve(&server);   (returns only when the link fails)
 */
#ifndef MICROCOMPILER_RPC_SERVER_H_
#define MICROCOMPILER_RPC_SERVER_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/graph_executor.h"
#include "microcompiler/rpc_framing.h"
#include "microcompiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Configuration (override with -D) ---- */

/* Largest message payload either side may send; advertised in the handshake.
 * At most 4000 so that CRC-16 catches every 1-, 2- and 3-bit error. */
#ifndef MC_RPC_MAX_PAYLOAD
#define MC_RPC_MAX_PAYLOAD 1024
#endif
/* Live device memory allocations at once. At most 255. */
#ifndef MC_RPC_MAX_ALLOCATIONS
#define MC_RPC_MAX_ALLOCATIONS 32
#endif
/* Arguments every call may pass at least: a registry whose functions take more (its max_args)
 * raises the server's count, up to 255 (CALL's count is a u8). HELLO advertises the count. */
#ifndef MC_RPC_MAX_ARGS
#define MC_RPC_MAX_ARGS 16
#endif
/* Registries the server searches, in order. */
#ifndef MC_RPC_MAX_REGISTRIES
#define MC_RPC_MAX_REGISTRIES 4
#endif
/* Models one firmware serves, picked by name (MODEL request). */
#ifndef MC_RPC_MAX_MODELS
#define MC_RPC_MAX_MODELS 4
#endif
/* Largest run count of one TIME request. */
#ifndef MC_RPC_MAX_TIMED_RUNS
#define MC_RPC_MAX_TIMED_RUNS 1000000u
#endif
/* Alignment of every allocation (and required of the pool). */
#define MC_RPC_POOL_ALIGN 8u

#if MC_RPC_MAX_PAYLOAD < 64 || MC_RPC_MAX_PAYLOAD > 4000
#error "MC_RPC_MAX_PAYLOAD must be between 64 and 4000"
#endif
#if MC_RPC_MAX_ALLOCATIONS < 1 || MC_RPC_MAX_ALLOCATIONS > 255
#error "MC_RPC_MAX_ALLOCATIONS must be between 1 and 255"
#endif
#if MC_RPC_MAX_ARGS < 1 || MC_RPC_MAX_ARGS > 255
#error "MC_RPC_MAX_ARGS must be between 1 and 255"
#endif

/* The arguments one call of a server may pass, for registries whose largest max_args is n. */
#define MC_RPC_CALL_ARGS(n) ((n) > MC_RPC_MAX_ARGS ? ((n) > 255u ? 255u : (n)) : MC_RPC_MAX_ARGS)
/* Bytes the server keeps at the end of its pool for the argument table of a call (a pointer and a
 * 4-byte scalar per argument; 8 >= sizeof(void*)): size the pool with it, HELLO's pool_bytes is
 * what is left. */
#define MC_RPC_CALL_TABLE_BYTES(n) ((MC_RPC_CALL_ARGS(n) * 12u + 7u) & ~7u)

/* ---- Protocol constants (docs/rpc.md) ---- */

#define MC_RPC_VERSION 3u /* 2: HELLO's reply carries the model fingerprint; 3: MODEL */
#define MC_RPC_REQUEST_HEADER 5u /* type:u8 session:u16 seq:u16 */
#define MC_RPC_REPLY_HEADER 6u   /* type:u8 session:u16 seq:u16 status:u8 */
#define MC_RPC_REPLY_BIT 0x80u   /* reply type = request type | MC_RPC_REPLY_BIT */

/* Requests (host to device). */
#define MC_RPC_HELLO 0x01u
#define MC_RPC_BYE 0x02u
#define MC_RPC_PING 0x03u
#define MC_RPC_LOOKUP 0x04u
#define MC_RPC_FUNCTION_NAME 0x05u
#define MC_RPC_ALLOC 0x06u
#define MC_RPC_FREE 0x07u
#define MC_RPC_WRITE 0x08u
#define MC_RPC_READ 0x09u
#define MC_RPC_CALL 0x0Au
#define MC_RPC_TIME 0x0Bu
#define MC_RPC_MODEL 0x0Cu /* name -> fingerprint:u64 of that model (firmware with several models) */
/* Unsolicited device messages. */
#define MC_RPC_BOOT 0x40u
#define MC_RPC_LOG 0x41u
#define MC_RPC_BUSY 0x42u
#define MC_RPC_NAK 0x43u /* a damaged frame arrived */

/* Argument tags of CALL and TIME. */
#define MC_RPC_ARG_INT32 0x01u
#define MC_RPC_ARG_FLOAT32 0x02u
#define MC_RPC_ARG_TENSOR 0x03u /* handle:u16 offset:u32 */

/* Reply statuses beyond mc_status_t (which uses 0..63). */
#define MC_RPC_STATUS_NO_SESSION 0x40u /* no such session: the device reset or another host took over */
#define MC_RPC_STATUS_VERSION 0x41u    /* protocol version mismatch */

/* ---- The server ---- */

#define MC_RPC_FRAME_CAPACITY (MC_RPC_MAX_PAYLOAD + MC_RPC_FRAME_OVERHEAD)

typedef struct {
  uint32_t offset; /* inside the pool */
  uint32_t bytes;
  uint8_t generation; /* bumped on free, so stale handles are refused */
  uint8_t live;
} mc_rpc_block_t;

typedef struct {
  const char* name; /* the model's C name, e.g. "kws" */
  uint64_t fingerprint;
} mc_rpc_model_t;

typedef struct {
  const mc_op_registry_t* registries[MC_RPC_MAX_REGISTRIES];
  uint32_t registry_count;
  uint32_t function_count;
  uint8_t* pool;
  uint32_t pool_bytes;  /* for ALLOC: the pool without the call table */
  uint32_t max_args;    /* of one call: MC_RPC_CALL_ARGS of the registries' largest max_args */
  void** call_args;     /* the call table at the pool's end: max_args pointers, */
  void* call_scalars;   /* then max_args 4-byte int32/float32 values */
  mc_rpc_block_t blocks[MC_RPC_MAX_ALLOCATIONS];

  mc_rpc_decoder_t decoder;
  uint8_t rx_buffer[MC_RPC_FRAME_CAPACITY];
  uint8_t reply[MC_RPC_MAX_PAYLOAD]; /* the last reply, kept to answer retries */
  size_t reply_len;

  uint32_t boot_nonce;
  uint32_t host_nonce; /* of the HELLO that opened the session */
  uint16_t session;    /* 0: none since boot */
  uint16_t last_seq;   /* of the last request executed in this session */
  uint8_t session_open;
  uint32_t damaged_frames;
  uint64_t model_fingerprint; /* of the compiled model this firmware holds; 0: none given */
  mc_rpc_model_t models[MC_RPC_MAX_MODELS]; /* the models a MODEL request can name */
  uint32_t model_count;
} mc_rpc_server_t;

/* Set up the server. registries: registry_count operator registries whose
 * functions become callable (function ids number them in order). pool: device
 * memory for ALLOC, aligned to MC_RPC_POOL_ALIGN; its last
 * MC_RPC_CALL_TABLE_BYTES(largest max_args of the registries) bytes hold the
 * arguments of a call (MC_ERR_OUT_OF_MEMORY when the pool is smaller). */
mc_status_t mc_rpc_server_init(mc_rpc_server_t* server, const mc_op_registry_t* const* registries,
                               uint32_t registry_count, uint8_t* pool, size_t pool_bytes);

/* Name the compiled model this firmware serves: its fingerprint (<NAME>_FINGERPRINT
 * in the generated <name>.h, a hash of the model's constants, kernels and graph).
 * HELLO's reply carries it, so a host refuses a device that holds another model.
 * Call after mc_rpc_server_init. */
void mc_rpc_server_set_model(mc_rpc_server_t* server, uint64_t fingerprint);

/* Add a model the host can pick by name (a firmware with several models): a
 * MODEL request with this name answers its fingerprint; the first one added is
 * also the one HELLO reports. name must stay valid (a string literal). Returns
 * MC_ERR_OUT_OF_MEMORY beyond MC_RPC_MAX_MODELS models. */
mc_status_t mc_rpc_server_add_model(mc_rpc_server_t* server, const char* name, uint64_t fingerprint);

/* Announce the boot to the host (a BOOT message with a fresh nonce). */
mc_status_t mc_rpc_server_announce(mc_rpc_server_t* server);

/* Process received bytes: complete requests are executed and answered. */
void mc_rpc_server_receive(mc_rpc_server_t* server, const uint8_t* data, size_t len);

/* Read and serve bytes forever; returns the platform's error when the link
 * fails (on POSIX: the host closed stdin). */
mc_status_t mc_rpc_server_serve(mc_rpc_server_t* server);

/* Forward one log line to the host (truncated to fit one message). */
mc_status_t mc_rpc_server_log(const mc_rpc_server_t* server, const char* text);

#ifdef __cplusplus
}
#endif

#endif /* MICROCOMPILER_RPC_SERVER_H_ */
