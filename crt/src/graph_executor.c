/* The on-device graph executor: runs a model from its binary graph description.
 * Format: microcompiler/codegen/graph_description.py. Every field is checked in
 * mc_graph_init() before it is used, so a damaged description is refused. */
#include "microcompiler/graph_executor.h"

#include <string.h>

#define HEADER_BYTES 20u
#define SLOT_BYTES 8u
#define OP_BYTES (4u + 2u * MC_GRAPH_MAX_ARGS)

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
  const uint8_t* strings = graph->ops + graph->op_count * OP_BYTES;
  return (const char*)(strings + read_u16(op));
}

static mc_status_t check_slot(const mc_graph_executor_t* graph, uint32_t slot) {
  return slot < graph->tensor_count ? MC_OK : MC_ERR_BAD_GRAPH;
}

mc_status_t mc_graph_init(mc_graph_executor_t* graph, const uint8_t* description,
                          size_t description_bytes, const mc_op_registry_t* registry,
                          uint8_t* pool, size_t pool_bytes) {
  size_t needed, strings_bytes, pool_needed;
  uint32_t i, k;
  const uint8_t* strings;
  if (graph == NULL || description == NULL || registry == NULL || pool == NULL)
    return MC_ERR_INVALID_ARGUMENT;
  if (description_bytes < HEADER_BYTES || memcmp(description, "MCG1", 4) != 0) return MC_ERR_BAD_GRAPH;
  memset(graph, 0, sizeof(*graph));
  graph->description = description;
  graph->description_bytes = description_bytes;
  graph->registry = registry;
  graph->pool = pool;
  graph->pool_bytes = pool_bytes;
  graph->tensor_count = read_u16(description + 4);
  graph->op_count = read_u16(description + 6);
  graph->input_count = description[8];
  graph->output_count = description[9];
  pool_needed = read_u32(description + 12);
  strings_bytes = read_u32(description + 16);
  needed = HEADER_BYTES + (size_t)graph->tensor_count * SLOT_BYTES +
           2u * ((size_t)graph->input_count + graph->output_count) +
           (size_t)graph->op_count * OP_BYTES + strings_bytes;
  if (needed != description_bytes) return MC_ERR_BAD_GRAPH;
  if (pool_needed > pool_bytes) return MC_ERR_OUT_OF_MEMORY;
  graph->tensors = description + HEADER_BYTES;
  graph->inputs = graph->tensors + graph->tensor_count * SLOT_BYTES;
  graph->outputs = graph->inputs + 2u * graph->input_count;
  graph->ops = graph->outputs + 2u * graph->output_count;
  strings = graph->ops + graph->op_count * OP_BYTES;
  if (strings_bytes == 0 ? graph->op_count != 0 : strings[strings_bytes - 1] != '\0')
    return MC_ERR_BAD_GRAPH;
  for (i = 0; i < graph->tensor_count; ++i) {
    const uint8_t* slot = graph->tensors + i * SLOT_BYTES;
    uint32_t offset = read_u32(slot), bytes = read_u32(slot + 4);
    if (offset > pool_needed || bytes > pool_needed - offset) return MC_ERR_BAD_GRAPH;
  }
  for (i = 0; i < graph->input_count; ++i)
    if (check_slot(graph, read_u16(graph->inputs + 2u * i)) != MC_OK) return MC_ERR_BAD_GRAPH;
  for (i = 0; i < graph->output_count; ++i)
    if (check_slot(graph, read_u16(graph->outputs + 2u * i)) != MC_OK) return MC_ERR_BAD_GRAPH;
  for (i = 0; i < graph->op_count; ++i) {
    const uint8_t* op = graph->ops + i * OP_BYTES;
    if (read_u16(op) >= strings_bytes || op[2] > MC_GRAPH_MAX_ARGS) return MC_ERR_BAD_GRAPH;
    for (k = 0; k < op[2]; ++k)
      if (check_slot(graph, read_u16(op + 4 + 2u * k)) != MC_OK) return MC_ERR_BAD_GRAPH;
    if (mc_registry_lookup(registry, op_name(graph, op)) == NULL) return MC_ERR_NOT_FOUND;
  }
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
  uint32_t i, k, unused;
  void* args[MC_GRAPH_MAX_ARGS];
  if (graph == NULL || graph->description == NULL) return MC_ERR_INVALID_ARGUMENT;
  for (i = 0; i < graph->op_count; ++i) {
    const uint8_t* op = graph->ops + i * OP_BYTES;
    mc_op_fn fn = mc_registry_lookup(graph->registry, op_name(graph, op));
    if (fn == NULL) return MC_ERR_NOT_FOUND;
    for (k = 0; k < op[2]; ++k) args[k] = slot_memory(graph, read_u16(op + 4 + 2u * k), &unused);
    fn(args);
  }
  return MC_OK;
}
