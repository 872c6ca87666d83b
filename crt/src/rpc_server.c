/* The on-device RPC server. Protocol: docs/rpc.md; API: microcompiler/rpc_server.h.
 *
 * Reliability model: the host numbers its requests (seq) within a session. The
 * server executes a request only when its seq is the next one; a repeat of the
 * last seq (the host retrying after a lost reply) gets the cached reply again
 * without executing anything twice; anything else is a stale duplicate and is
 * dropped. Damaged frames are dropped and answered with a NAK; the host retries. */
#include "microcompiler/rpc_server.h"

#include <string.h>

#include "microcompiler/platform.h"

#define BLOCK_NONE 0xFFFFFFFFu

/* ---- Little-endian readers and writers with bounds checks ---- */

typedef struct {
  const uint8_t* next;
  size_t left;
  int ok; /* cleared by any read past the end */
} reader_t;

static uint32_t take(reader_t* reader, size_t bytes) {
  uint32_t value = 0;
  size_t i;
  if (reader->left < bytes) {
    reader->ok = 0;
    reader->left = 0;
    return 0;
  }
  for (i = 0; i < bytes; ++i) value |= (uint32_t)reader->next[i] << (8u * i);
  reader->next += bytes;
  reader->left -= bytes;
  return value;
}

static void put_le(uint8_t* out, uint64_t value, size_t bytes) {
  size_t i;
  for (i = 0; i < bytes; ++i) out[i] = (uint8_t)(value >> (8u * i));
}

/* Replies are built in server->reply, which also keeps the last one for retries. */
static int reply_put(mc_rpc_server_t* server, uint64_t value, size_t bytes) {
  if (server->reply_len + bytes > sizeof(server->reply)) return 0;
  put_le(server->reply + server->reply_len, value, bytes);
  server->reply_len += bytes;
  return 1;
}

static void write_header(uint8_t* out, uint8_t type, uint16_t session, uint16_t seq, uint8_t status) {
  out[0] = type;
  put_le(out + 1, session, 2);
  put_le(out + 3, seq, 2);
  out[5] = status;
}

static void reply_begin(mc_rpc_server_t* server, uint8_t request_type, uint16_t seq) {
  write_header(server->reply, (uint8_t)(request_type | MC_RPC_REPLY_BIT), server->session, seq, MC_OK);
  server->reply_len = MC_RPC_REPLY_HEADER;
}

/* Replace the reply with a bare status (the body built so far is dropped). */
static void reply_fail(mc_rpc_server_t* server, mc_status_t status) {
  server->reply[5] = (uint8_t)status;
  server->reply_len = MC_RPC_REPLY_HEADER;
}

static void send_reply(mc_rpc_server_t* server) {
  (void)mc_rpc_send_frame(server->reply, server->reply_len);
}

/* A short reply that is not cached (so it does not disturb retries). */
static void send_uncached(uint8_t type, uint16_t session, uint16_t seq, uint8_t status, uint64_t value,
                          size_t value_bytes) {
  uint8_t frame[MC_RPC_REPLY_HEADER + 8];
  write_header(frame, type, session, seq, status);
  put_le(frame + MC_RPC_REPLY_HEADER, value, value_bytes);
  (void)mc_rpc_send_frame(frame, MC_RPC_REPLY_HEADER + value_bytes);
}

/* ---- Device memory: a fixed table of blocks inside the caller's pool ---- */

static uint32_t align_up(uint32_t value) {
  return (value + (MC_RPC_POOL_ALIGN - 1u)) & ~(uint32_t)(MC_RPC_POOL_ALIGN - 1u);
}

static int overlaps_live_block(const mc_rpc_server_t* server, uint32_t offset, uint32_t bytes) {
  uint32_t i;
  for (i = 0; i < MC_RPC_MAX_ALLOCATIONS; ++i) {
    const mc_rpc_block_t* block = &server->blocks[i];
    if (block->live && offset < block->offset + block->bytes && block->offset < offset + bytes) return 1;
  }
  return 0;
}

/* The lowest free offset where bytes fit (first fit), or BLOCK_NONE. */
static uint32_t find_free_offset(const mc_rpc_server_t* server, uint32_t bytes) {
  uint32_t best = BLOCK_NONE, i;
  for (i = 0; i <= MC_RPC_MAX_ALLOCATIONS; ++i) {
    uint32_t candidate;
    if (i == MC_RPC_MAX_ALLOCATIONS) {
      candidate = 0;
    } else if (server->blocks[i].live) {
      /* Blocks lie inside the pool (at most 2^31 bytes), so this cannot overflow. */
      candidate = align_up(server->blocks[i].offset + server->blocks[i].bytes);
    } else {
      continue;
    }
    if (candidate >= best || candidate > server->pool_bytes || bytes > server->pool_bytes - candidate)
      continue;
    if (!overlaps_live_block(server, candidate, bytes)) best = candidate;
  }
  return best;
}

static void free_all_blocks(mc_rpc_server_t* server) {
  uint32_t i;
  for (i = 0; i < MC_RPC_MAX_ALLOCATIONS; ++i) {
    if (server->blocks[i].live) server->blocks[i].generation++;
    server->blocks[i].live = 0;
  }
}

/* Handles are (generation << 8) | (slot + 1); 0 is never a handle. */
static mc_rpc_block_t* find_block(mc_rpc_server_t* server, uint32_t handle) {
  uint32_t slot = (handle & 0xFFu);
  mc_rpc_block_t* block;
  if (slot == 0 || slot > MC_RPC_MAX_ALLOCATIONS) return NULL;
  block = &server->blocks[slot - 1u];
  if (!block->live || block->generation != (uint8_t)(handle >> 8)) return NULL;
  return block;
}

/* ---- Functions from the registries ---- */

static const mc_op_entry_t* function_entry(const mc_rpc_server_t* server, uint32_t id) {
  uint32_t r;
  for (r = 0; r < server->registry_count; ++r) {
    const mc_op_registry_t* registry = server->registries[r];
    if (id < registry->count) return &registry->entries[id];
    id -= registry->count;
  }
  return NULL;
}

/* Does the NUL-terminated name equal the len bytes at wanted? */
static int name_equals(const char* name, const uint8_t* wanted, size_t len) {
  size_t i;
  for (i = 0; i < len; ++i)
    if (name[i] == '\0' || (uint8_t)name[i] != wanted[i]) return 0;
  return name[len] == '\0';
}

/* ---- Request handlers: each fills server->reply after reply_begin() ---- */

static void handle_lookup(mc_rpc_server_t* server, const uint8_t* body, size_t len) {
  uint32_t id;
  if (len == 0) {
    reply_fail(server, MC_ERR_PROTOCOL);
    return;
  }
  for (id = 0; id < server->function_count; ++id) {
    const mc_op_entry_t* entry = function_entry(server, id);
    if (entry != NULL && entry->name != NULL && name_equals(entry->name, body, len)) {
      reply_put(server, id, 2);
      return;
    }
  }
  reply_fail(server, MC_ERR_NOT_FOUND);
}

/* MODEL: the fingerprint of the model with this name (mc_rpc_server_add_model). */
static void handle_model(mc_rpc_server_t* server, const uint8_t* body, size_t len) {
  uint32_t i;
  if (len == 0) {
    reply_fail(server, MC_ERR_PROTOCOL);
    return;
  }
  for (i = 0; i < server->model_count; ++i) {
    if (name_equals(server->models[i].name, body, len)) {
      reply_put(server, server->models[i].fingerprint, 8);
      return;
    }
  }
  reply_fail(server, MC_ERR_NOT_FOUND);
}

static void handle_function_name(mc_rpc_server_t* server, reader_t* body) {
  uint32_t id = take(body, 2);
  const mc_op_entry_t* entry;
  size_t n = 0;
  if (!body->ok || body->left != 0) {
    reply_fail(server, MC_ERR_PROTOCOL);
    return;
  }
  entry = function_entry(server, id);
  if (entry == NULL || entry->name == NULL) {
    reply_fail(server, MC_ERR_NOT_FOUND);
    return;
  }
  while (entry->name[n] != '\0') {
    if (!reply_put(server, (uint8_t)entry->name[n], 1)) {
      reply_fail(server, MC_ERR_UNSUPPORTED); /* a name longer than a message */
      return;
    }
    ++n;
  }
}

static void handle_alloc(mc_rpc_server_t* server, reader_t* body) {
  uint32_t bytes = take(body, 4), slot, offset;
  if (!body->ok || body->left != 0 || bytes == 0) {
    reply_fail(server, body->ok && body->left == 0 ? MC_ERR_INVALID_ARGUMENT : MC_ERR_PROTOCOL);
    return;
  }
  for (slot = 0; slot < MC_RPC_MAX_ALLOCATIONS && server->blocks[slot].live; ++slot) {
  }
  offset = slot < MC_RPC_MAX_ALLOCATIONS ? find_free_offset(server, bytes) : BLOCK_NONE;
  if (offset == BLOCK_NONE) {
    reply_fail(server, MC_ERR_OUT_OF_MEMORY);
    return;
  }
  server->blocks[slot].offset = offset;
  server->blocks[slot].bytes = bytes;
  server->blocks[slot].live = 1;
  reply_put(server, ((uint32_t)server->blocks[slot].generation << 8) | (slot + 1u), 2);
}

static void handle_free(mc_rpc_server_t* server, reader_t* body) {
  uint32_t handle = take(body, 2);
  mc_rpc_block_t* block;
  if (!body->ok || body->left != 0) {
    reply_fail(server, MC_ERR_PROTOCOL);
    return;
  }
  block = find_block(server, handle);
  if (block == NULL) {
    reply_fail(server, MC_ERR_INVALID_ARGUMENT);
    return;
  }
  block->live = 0;
  block->generation++;
}

/* The block and offset of a WRITE/READ, checked against length bytes; NULL if out of range. */
static uint8_t* memory_range(mc_rpc_server_t* server, uint32_t handle, uint32_t offset, size_t length) {
  mc_rpc_block_t* block = find_block(server, handle);
  if (block == NULL || offset > block->bytes || length > block->bytes - offset) return NULL;
  return server->pool + block->offset + offset;
}

static void handle_write(mc_rpc_server_t* server, reader_t* body) {
  uint32_t handle = take(body, 2), offset = take(body, 4);
  uint8_t* memory;
  if (!body->ok) {
    reply_fail(server, MC_ERR_PROTOCOL);
    return;
  }
  memory = memory_range(server, handle, offset, body->left);
  if (memory == NULL) {
    reply_fail(server, MC_ERR_INVALID_ARGUMENT);
    return;
  }
  if (body->left > 0) memcpy(memory, body->next, body->left);
}

static void handle_read(mc_rpc_server_t* server, reader_t* body) {
  uint32_t handle = take(body, 2), offset = take(body, 4), length = take(body, 2);
  const uint8_t* memory;
  if (!body->ok || body->left != 0) {
    reply_fail(server, MC_ERR_PROTOCOL);
    return;
  }
  memory = memory_range(server, handle, offset, length);
  if (memory == NULL || length > sizeof(server->reply) - server->reply_len) {
    reply_fail(server, MC_ERR_INVALID_ARGUMENT);
    return;
  }
  if (length > 0) memcpy(server->reply + server->reply_len, memory, length);
  server->reply_len += length;
}

typedef union {
  int32_t as_int32;
  float as_float32;
} scalar_slot_t;

/* Parse "function_id:u16 [number:u32] argc:u8 args" (number only for TIME) into the call table;
 * the entries past argc are NULL. */
static mc_status_t prepare_call(mc_rpc_server_t* server, reader_t* body, uint32_t* number, mc_op_fn* fn) {
  uint32_t id = take(body, 2), argc, i;
  const mc_op_entry_t* entry;
  void** args = server->call_args;
  scalar_slot_t* scalars = (scalar_slot_t*)server->call_scalars;
  if (number != NULL) *number = take(body, 4);
  argc = take(body, 1);
  if (!body->ok) return MC_ERR_PROTOCOL;
  entry = function_entry(server, id);
  if (entry == NULL || entry->fn == NULL) return MC_ERR_NOT_FOUND;
  if (argc > server->max_args) return MC_ERR_INVALID_ARGUMENT;
  *fn = entry->fn;
  for (i = 0; i < server->max_args; ++i) args[i] = NULL;
  for (i = 0; i < argc; ++i) {
    uint32_t tag = take(body, 1);
    if (tag == MC_RPC_ARG_INT32) {
      scalars[i].as_int32 = (int32_t)take(body, 4);
      args[i] = &scalars[i];
    } else if (tag == MC_RPC_ARG_FLOAT32) {
      uint32_t bits = take(body, 4);
      memcpy(&scalars[i].as_float32, &bits, sizeof(bits));
      args[i] = &scalars[i];
    } else if (tag == MC_RPC_ARG_TENSOR) {
      uint32_t handle = take(body, 2), offset = take(body, 4);
      mc_rpc_block_t* block = find_block(server, handle);
      if (!body->ok) return MC_ERR_PROTOCOL;
      /* The pointer must land inside the block (at least one byte of it). */
      if (block == NULL || offset >= block->bytes) return MC_ERR_INVALID_ARGUMENT;
      args[i] = server->pool + block->offset + offset;
    } else {
      return MC_ERR_PROTOCOL;
    }
  }
  if (!body->ok || body->left != 0) return MC_ERR_PROTOCOL;
  return MC_OK;
}

/* Tell the host the request arrived and is running: it may take a while. */
static void send_busy(const mc_rpc_server_t* server, uint16_t seq) {
  send_uncached(MC_RPC_BUSY, server->session, seq, MC_OK, 0, 0);
}

static void handle_call(mc_rpc_server_t* server, reader_t* body, uint16_t seq) {
  mc_op_fn fn = NULL;
  uint64_t ticks = 0;
  mc_status_t status = prepare_call(server, body, NULL, &fn);
  if (status != MC_OK) {
    reply_fail(server, status);
    return;
  }
  send_busy(server, seq);
  if (mc_platform_timer_start() != MC_OK) {
    fn(server->call_args);
  } else {
    fn(server->call_args);
    if (mc_platform_timer_stop(&ticks) != MC_OK) ticks = 0;
  }
  reply_put(server, ticks, 8);
}

static void handle_time(mc_rpc_server_t* server, reader_t* body, uint16_t seq) {
  mc_op_fn fn = NULL;
  void* const* args = server->call_args;
  uint32_t number = 0, run;
  uint64_t ticks = 0;
  mc_status_t status = prepare_call(server, body, &number, &fn);
  if (status == MC_OK && (number == 0 || number > MC_RPC_MAX_TIMED_RUNS)) status = MC_ERR_INVALID_ARGUMENT;
  if (status != MC_OK) {
    reply_fail(server, status);
    return;
  }
  send_busy(server, seq);
  if (mc_platform_timer_start() != MC_OK) {
    reply_fail(server, MC_ERR_TIMER);
    return;
  }
  for (run = 0; run < number; ++run) fn(args);
  if (mc_platform_timer_stop(&ticks) != MC_OK) {
    reply_fail(server, MC_ERR_TIMER);
    return;
  }
  reply_put(server, ticks, 8);
  reply_put(server, mc_platform_timer_hz(), 4);
}

/* ---- Sessions ---- */

static void handle_hello(mc_rpc_server_t* server, uint16_t session, uint16_t seq, const uint8_t* body,
                         size_t len) {
  reader_t reader;
  uint32_t version, host_nonce;
  reader.next = body;
  reader.left = len;
  reader.ok = 1;
  version = take(&reader, 1);
  host_nonce = take(&reader, 4);
  if (session == 0 || !reader.ok || reader.left != 0) {
    send_uncached(MC_RPC_HELLO | MC_RPC_REPLY_BIT, session, seq, MC_ERR_PROTOCOL, 0, 0);
    return;
  }
  if (session == server->session && host_nonce == server->host_nonce) {
    /* A retried HELLO: answer again if it is still the last request, else it is stale. */
    if (seq == server->last_seq && server->reply[0] == (MC_RPC_HELLO | MC_RPC_REPLY_BIT)) send_reply(server);
    return;
  }
  if (version != MC_RPC_VERSION) {
    send_uncached(MC_RPC_HELLO | MC_RPC_REPLY_BIT, session, seq, MC_RPC_STATUS_VERSION, MC_RPC_VERSION, 1);
    return;
  }
  free_all_blocks(server);
  server->session = session;
  server->host_nonce = host_nonce;
  server->last_seq = seq;
  server->session_open = 1;
  reply_begin(server, MC_RPC_HELLO, seq);
  reply_put(server, MC_RPC_VERSION, 1);
  reply_put(server, host_nonce, 4);
  reply_put(server, server->boot_nonce, 4);
  reply_put(server, MC_RPC_MAX_PAYLOAD, 2);
  reply_put(server, server->pool_bytes, 4);
  reply_put(server, mc_platform_timer_hz(), 4);
  reply_put(server, server->function_count, 2);
  reply_put(server, server->max_args, 1);
  reply_put(server, MC_RPC_MAX_ALLOCATIONS, 1);
  reply_put(server, server->model_fingerprint, 8);
  send_reply(server);
}

/* PING works without a session: the body comes back unchanged. The reply is
 * built in the receive buffer so the cached reply survives. */
static void handle_ping(mc_rpc_server_t* server, uint16_t session, uint16_t seq, const uint8_t* body,
                        size_t len) {
  uint8_t* out = server->rx_buffer;
  uint8_t status = MC_OK;
  if (MC_RPC_REPLY_HEADER + len > MC_RPC_MAX_PAYLOAD) {
    status = MC_ERR_INVALID_ARGUMENT;
    len = 0;
  }
  if (len > 0) memmove(out + MC_RPC_REPLY_HEADER, body, len);
  write_header(out, MC_RPC_PING | MC_RPC_REPLY_BIT, session, seq, status);
  (void)mc_rpc_send_frame(out, MC_RPC_REPLY_HEADER + len);
}

static void execute(mc_rpc_server_t* server, uint8_t type, uint16_t seq, const uint8_t* body, size_t len) {
  reader_t reader;
  reader.next = body;
  reader.left = len;
  reader.ok = 1;
  reply_begin(server, type, seq);
  switch (type) {
    case MC_RPC_BYE:
      free_all_blocks(server);
      server->session_open = 0;
      if (len != 0) reply_fail(server, MC_ERR_PROTOCOL);
      break;
    case MC_RPC_LOOKUP: handle_lookup(server, body, len); break;
    case MC_RPC_MODEL: handle_model(server, body, len); break;
    case MC_RPC_FUNCTION_NAME: handle_function_name(server, &reader); break;
    case MC_RPC_ALLOC: handle_alloc(server, &reader); break;
    case MC_RPC_FREE: handle_free(server, &reader); break;
    case MC_RPC_WRITE: handle_write(server, &reader); break;
    case MC_RPC_READ: handle_read(server, &reader); break;
    case MC_RPC_CALL: handle_call(server, &reader, seq); break;
    case MC_RPC_TIME: handle_time(server, &reader, seq); break;
    default: reply_fail(server, MC_ERR_UNSUPPORTED); break;
  }
  send_reply(server);
}

/* NO_SESSION: boot_nonce:u32, then the open session's id (0: none), so the host can tell a
 * reset (no session since boot) from another host having started a session. */
static void send_no_session(const mc_rpc_server_t* server, uint8_t type, uint16_t session, uint16_t seq) {
  uint64_t open_session = server->session_open ? server->session : 0u;
  send_uncached((uint8_t)(type | MC_RPC_REPLY_BIT), session, seq, MC_RPC_STATUS_NO_SESSION,
                (uint64_t)server->boot_nonce | (open_session << 32), 6);
}

static void handle_request(mc_rpc_server_t* server, const uint8_t* payload, size_t len) {
  uint8_t type;
  uint16_t session, seq;
  if (len < MC_RPC_REQUEST_HEADER) return; /* too short to answer */
  type = payload[0];
  session = (uint16_t)(payload[1] | (payload[2] << 8));
  seq = (uint16_t)(payload[3] | (payload[4] << 8));
  payload += MC_RPC_REQUEST_HEADER;
  len -= MC_RPC_REQUEST_HEADER;
  if ((type & MC_RPC_REPLY_BIT) != 0 || type >= MC_RPC_BOOT) return; /* not a request: ignore */
  if (type == MC_RPC_PING) {
    handle_ping(server, session, seq, payload, len);
    return;
  }
  if (type == MC_RPC_HELLO) {
    handle_hello(server, session, seq, payload, len);
    return;
  }
  if (session == 0 || session != server->session) {
    send_no_session(server, type, session, seq);
    return;
  }
  if (seq == server->last_seq) { /* the host did not get our reply: send it again */
    send_reply(server);
    return;
  }
  if (!server->session_open) {
    send_no_session(server, type, session, seq);
    return;
  }
  if (seq != (uint16_t)(server->last_seq + 1u)) return; /* a stale duplicate */
  server->last_seq = seq;
  execute(server, type, seq, payload, len);
}

/* ---- Public API ---- */

mc_status_t mc_rpc_server_init(mc_rpc_server_t* server, const mc_op_registry_t* const* registries,
                               uint32_t registry_count, uint8_t* pool, size_t pool_bytes) {
  uint32_t r, widest = 0, table_bytes;
  uint8_t nonce[4] = {0, 0, 0, 0};
  if (server == NULL || registry_count > MC_RPC_MAX_REGISTRIES || (registries == NULL && registry_count > 0))
    return MC_ERR_INVALID_ARGUMENT;
  if ((pool == NULL && pool_bytes > 0) || pool_bytes > 0x7FFFFFFFu ||
      ((size_t)pool % MC_RPC_POOL_ALIGN) != 0)
    return MC_ERR_INVALID_ARGUMENT;
  memset(server, 0, sizeof(*server));
  for (r = 0; r < registry_count; ++r) {
    if (registries[r] == NULL || registries[r]->count > 0xFFFFu - server->function_count)
      return MC_ERR_INVALID_ARGUMENT;
    server->registries[r] = registries[r];
    server->function_count += registries[r]->count;
    if (registries[r]->max_args > widest) widest = registries[r]->max_args;
  }
  server->registry_count = registry_count;
  /* The call table: the pool's last bytes (8-aligned, like the pool), pointers first. */
  server->max_args = MC_RPC_CALL_ARGS(widest);
  table_bytes = MC_RPC_CALL_TABLE_BYTES(widest);
  if (pool_bytes < table_bytes) return MC_ERR_OUT_OF_MEMORY;
  server->pool = pool;
  server->pool_bytes = (uint32_t)((pool_bytes - table_bytes) & ~(size_t)(MC_RPC_POOL_ALIGN - 1u));
  server->call_args = (void**)(void*)(pool + server->pool_bytes);
  server->call_scalars = (void*)(pool + server->pool_bytes + server->max_args * sizeof(void*));
  mc_rpc_decoder_init(&server->decoder, server->rx_buffer, sizeof(server->rx_buffer));
  (void)mc_platform_random(nonce, sizeof(nonce));
  server->boot_nonce = (uint32_t)nonce[0] | ((uint32_t)nonce[1] << 8) | ((uint32_t)nonce[2] << 16) |
                       ((uint32_t)nonce[3] << 24);
  if (server->boot_nonce == 0) server->boot_nonce = 1;
  return MC_OK;
}

void mc_rpc_server_set_model(mc_rpc_server_t* server, uint64_t fingerprint) {
  if (server != NULL) server->model_fingerprint = fingerprint;
}

mc_status_t mc_rpc_server_add_model(mc_rpc_server_t* server, const char* name, uint64_t fingerprint) {
  if (server == NULL || name == NULL || name[0] == '\0') return MC_ERR_INVALID_ARGUMENT;
  if (server->model_count >= MC_RPC_MAX_MODELS) return MC_ERR_OUT_OF_MEMORY;
  server->models[server->model_count].name = name;
  server->models[server->model_count].fingerprint = fingerprint;
  server->model_count++;
  if (server->model_count == 1u) server->model_fingerprint = fingerprint;
  return MC_OK;
}

mc_status_t mc_rpc_server_announce(mc_rpc_server_t* server) {
  uint8_t frame[MC_RPC_REPLY_HEADER + 7];
  write_header(frame, MC_RPC_BOOT, 0, 0, MC_OK);
  frame[MC_RPC_REPLY_HEADER] = MC_RPC_VERSION;
  put_le(frame + MC_RPC_REPLY_HEADER + 1, server->boot_nonce, 4);
  put_le(frame + MC_RPC_REPLY_HEADER + 5, MC_RPC_MAX_PAYLOAD, 2);
  return mc_rpc_send_frame(frame, sizeof(frame));
}

void mc_rpc_server_receive(mc_rpc_server_t* server, const uint8_t* data, size_t len) {
  size_t i;
  for (i = 0; i < len; ++i) {
    const uint8_t* payload = NULL;
    size_t payload_len = 0;
    mc_rpc_decode_result_t result = mc_rpc_decoder_feed(&server->decoder, data[i], &payload, &payload_len);
    if (result == MC_RPC_DECODE_FRAME) {
      handle_request(server, payload, payload_len);
    } else if (result == MC_RPC_DECODE_DAMAGED) {
      /* Say so at once: the host resends without waiting for its timeout. */
      server->damaged_frames++;
      send_uncached(MC_RPC_NAK, server->session, server->last_seq, MC_OK, 0, 0);
    }
  }
}

mc_status_t mc_rpc_server_serve(mc_rpc_server_t* server) {
  for (;;) {
    uint8_t byte;
    mc_status_t status = mc_platform_read_byte(&byte, UINT32_MAX);
    if (status != MC_OK) return status;
    mc_rpc_server_receive(server, &byte, 1);
  }
}

mc_status_t mc_rpc_server_log(const mc_rpc_server_t* server, const char* text) {
  uint8_t frame[MC_RPC_REPLY_HEADER + 160];
  size_t n = 0;
  if (server == NULL || text == NULL) return MC_ERR_INVALID_ARGUMENT;
  write_header(frame, MC_RPC_LOG, server->session, 0, MC_OK);
  while (text[n] != '\0' && MC_RPC_REPLY_HEADER + n < sizeof(frame)) {
    frame[MC_RPC_REPLY_HEADER + n] = (uint8_t)text[n];
    ++n;
  }
  return mc_rpc_send_frame(frame, MC_RPC_REPLY_HEADER + n);
}
