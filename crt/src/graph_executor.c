/* The on-device graph executor: runs a model from its binary graph description.
 * Format: microcompiler/codegen/graph_description.py. Every field is checked in
 * mc_graph_init() before it is used, so a damaged description is refused. */
#include "microcompiler/graph_executor.h"

#include <string.h>

#define HEADER_BYTES 20u
#define SLOT_BYTES 8u
#define OP_HEADER_BYTES 4u /* u16 name_offset, u16 arg_count; arg_count x u16 slot follow */

/* The pointer table at the pool's end holds one void* per MC_GRAPH_ARG_BYTES. */
typedef char mc_graph_arg_bytes_hold_a_pointer[sizeof(void*) <= MC_GRAPH_ARG_BYTES ? 1 : -1];

static uint32_t read_u16(const uint8_t* p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }

static uint32_t read_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

mc_op_fn mc_registry_lookup(const mc_op_registry_t* registry, const char* name) {
  uint32_t i;
  if (registry == NULL || name == NULL) return NULL;
  for (i = 0; i < registry->count; ++i) {
    if (strcmp(registry->entries[i].name, name) == 0) return registry->entries[i].fn;
  }
  return NULL;
}

static const char* op_name(const mc_graph_executor_t* graph, const uint8_t* op) {
  return (const char*)(graph->strings + read_u16(op));
}

static mc_status_t check_slot(const mc_graph_executor_t* graph, uint32_t slot) {
  return slot < graph->tensor_count ? MC_OK : MC_ERR_BAD_GRAPH;
}

/* mc_graph_init's checks, filling graph as it goes. */
static mc_status_t parse(mc_graph_executor_t* graph, const uint8_t* description, size_t description_bytes,
                         uint8_t* pool, size_t pool_bytes) {
  size_t fixed, strings_bytes, pool_needed, args_offset;
  uint32_t i, k;
  const uint8_t* op;
  if (description_bytes < HEADER_BYTES || memcmp(description, "MCG2", 4) != 0) return MC_ERR_BAD_GRAPH;
  graph->tensor_count = read_u16(description + 4);
  graph->op_count = read_u16(description + 6);
  graph->input_count = description[8];
  graph->output_count = description[9];
  graph->max_args = read_u16(description + 10);
  pool_needed = read_u32(description + 12);
  strings_bytes = read_u32(description + 16);
  fixed = HEADER_BYTES + (size_t)graph->tensor_count * SLOT_BYTES +
          2u * ((size_t)graph->input_count + graph->output_count);
  if (fixed > description_bytes || strings_bytes > description_bytes - fixed) return MC_ERR_BAD_GRAPH;
  /* The pointer table: the pool's last max_args entries, after every slot. */
  if ((size_t)graph->max_args * MC_GRAPH_ARG_BYTES > pool_needed) return MC_ERR_BAD_GRAPH;
  args_offset = pool_needed - (size_t)graph->max_args * MC_GRAPH_ARG_BYTES;
  if (args_offset % MC_GRAPH_ARG_BYTES != 0) return MC_ERR_BAD_GRAPH;
  if (pool_needed > pool_bytes) return MC_ERR_OUT_OF_MEMORY;
  if (graph->max_args > 0 && (size_t)(pool + args_offset) % sizeof(void*) != 0) return MC_ERR_INVALID_ARGUMENT;
  graph->args = (void**)(void*)(pool + args_offset);
  graph->tensors = description + HEADER_BYTES;
  graph->inputs = graph->tensors + graph->tensor_count * SLOT_BYTES;
  graph->outputs = graph->inputs + 2u * graph->input_count;
  graph->ops = graph->outputs + 2u * graph->output_count;
  graph->strings = description + (description_bytes - strings_bytes);
  if (strings_bytes == 0 ? graph->op_count != 0 : graph->strings[strings_bytes - 1] != '\0')
    return MC_ERR_BAD_GRAPH;
  for (i = 0; i < graph->tensor_count; ++i) {
    const uint8_t* slot = graph->tensors + i * SLOT_BYTES;
    uint32_t offset = read_u32(slot), bytes = read_u32(slot + 4);
    if (offset > args_offset || bytes > args_offset - offset) return MC_ERR_BAD_GRAPH;
  }
  for (i = 0; i < graph->input_count; ++i)
    if (check_slot(graph, read_u16(graph->inputs + 2u * i)) != MC_OK) return MC_ERR_BAD_GRAPH;
  for (i = 0; i < graph->output_count; ++i)
    if (check_slot(graph, read_u16(graph->outputs + 2u * i)) != MC_OK) return MC_ERR_BAD_GRAPH;
  /* Records of their own length: each must end before the names, and the last one right there. */
  op = graph->ops;
  for (i = 0; i < graph->op_count; ++i) {
    size_t left = (size_t)(graph->strings - op);
    uint32_t argc;
    if (left < OP_HEADER_BYTES) return MC_ERR_BAD_GRAPH;
    argc = read_u16(op + 2);
    if (read_u16(op) >= strings_bytes || argc > graph->max_args || 2u * (size_t)argc > left - OP_HEADER_BYTES)
      return MC_ERR_BAD_GRAPH;
    for (k = 0; k < argc; ++k)
      if (check_slot(graph, read_u16(op + OP_HEADER_BYTES + 2u * k)) != MC_OK) return MC_ERR_BAD_GRAPH;
    if (mc_registry_lookup(graph->registry, op_name(graph, op)) == NULL) return MC_ERR_NOT_FOUND;
    op += OP_HEADER_BYTES + 2u * argc;
  }
  return op == graph->strings ? MC_OK : MC_ERR_BAD_GRAPH;
}

mc_status_t mc_graph_init(mc_graph_executor_t* graph, const uint8_t* description,
                          size_t description_bytes, const mc_op_registry_t* registry,
                          uint8_t* pool, size_t pool_bytes) {
  mc_status_t status;
  if (graph == NULL) return MC_ERR_INVALID_ARGUMENT;
  memset(graph, 0, sizeof(*graph));
  if (description == NULL || registry == NULL || pool == NULL) return MC_ERR_INVALID_ARGUMENT;
  graph->registry = registry;
  graph->pool = pool;
  graph->pool_bytes = pool_bytes;
  status = parse(graph, description, description_bytes, pool, pool_bytes);
  if (status != MC_OK) {
    memset(graph, 0, sizeof(*graph)); /* description NULL: every other call refuses it */
    return status;
  }
  graph->description = description;
  graph->description_bytes = description_bytes;
  return MC_OK;
}

static uint8_t* slot_memory(const mc_graph_executor_t* graph, uint32_t slot, uint32_t* bytes) {
  const uint8_t* entry = graph->tensors + slot * SLOT_BYTES;
  *bytes = read_u32(entry + 4);
  return graph->pool + read_u32(entry);
}

/* The pool memory of model input or output `index`, checked against the caller's byte count. */
static mc_status_t io_memory(const mc_graph_executor_t* graph, int is_output, uint32_t index, size_t bytes,
                             uint8_t** memory) {
  const uint8_t* table;
  uint32_t count, slot_bytes;
  if (graph == NULL || graph->description == NULL) return MC_ERR_INVALID_ARGUMENT;
  table = is_output ? graph->outputs : graph->inputs;
  count = is_output ? graph->output_count : graph->input_count;
  if (index >= count) return MC_ERR_INVALID_ARGUMENT;
  *memory = slot_memory(graph, read_u16(table + 2u * index), &slot_bytes);
  return bytes == slot_bytes ? MC_OK : MC_ERR_INVALID_ARGUMENT;
}

mc_status_t mc_graph_set_input(mc_graph_executor_t* graph, uint32_t index, const void* data,
                               size_t bytes) {
  uint8_t* memory;
  mc_status_t status;
  if (data == NULL) return MC_ERR_INVALID_ARGUMENT;
  status = io_memory(graph, 0, index, bytes, &memory);
  if (status == MC_OK) memcpy(memory, data, bytes);
  return status;
}

mc_status_t mc_graph_get_output(const mc_graph_executor_t* graph, uint32_t index, void* data,
                                size_t bytes) {
  uint8_t* memory;
  mc_status_t status;
  if (data == NULL) return MC_ERR_INVALID_ARGUMENT;
  status = io_memory(graph, 1, index, bytes, &memory);
  if (status == MC_OK) memcpy(data, memory, bytes);
  return status;
}

mc_status_t mc_graph_run(mc_graph_executor_t* graph) {
  uint32_t i, k, argc, unused;
  const uint8_t* op;
  if (graph == NULL || graph->description == NULL) return MC_ERR_INVALID_ARGUMENT;
  op = graph->ops;
  for (i = 0; i < graph->op_count; ++i) {
    mc_op_fn fn = mc_registry_lookup(graph->registry, op_name(graph, op));
    if (fn == NULL) return MC_ERR_NOT_FOUND;
    argc = read_u16(op + 2);
    for (k = 0; k < argc; ++k)
      graph->args[k] = slot_memory(graph, read_u16(op + OP_HEADER_BYTES + 2u * k), &unused);
    fn(graph->args);
    op += OP_HEADER_BYTES + 2u * argc;
  }
  return MC_OK;
}
