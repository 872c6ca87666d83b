/* The on-device graph executor.
 *
 * It runs a model from a compact binary graph description emitted by codegen
 * (src/<model>_graph.c; format in docs/architecture.md) instead of the
 * generated <model>_run() function. Operators are looked up by name in a
 * generated registry; tensors live at compile-time-planned offsets inside a
 * pool the caller provides. Nothing is allocated at run time. State a model
 * keeps across inferences (docs/state.md) lives in the model library's own
 * static arrays, not in the pool: <model>_reset() restores it.
 */
#ifndef MICROCOMPILER_GRAPH_EXECUTOR_H_
#define MICROCOMPILER_GRAPH_EXECUTOR_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every operator function, called through a uniform wrapper: args holds one
 * pointer per activation tensor parameter, inputs first, then outputs. */
typedef void (*mc_op_fn)(void* const* args);

typedef struct {
  const char* name;
  mc_op_fn fn;
} mc_op_entry_t;

typedef struct {
  const mc_op_entry_t* entries;
  uint32_t count;
  uint32_t max_args; /* the most arguments one of its functions takes (the RPC server sizes its call
                        table for it: at least MC_RPC_MAX_ARGS, so 0 when unknown) */
} mc_op_registry_t;

/* Find an operator function by name; NULL when absent. */
mc_op_fn mc_registry_lookup(const mc_op_registry_t* registry, const char* name);

/* Bytes of one entry of the pointer table the executor fills for a call, at the end of the pool
 * (the description's max_args entries): at least sizeof(void*) on every target. */
#define MC_GRAPH_ARG_BYTES 8

typedef struct {
  const uint8_t* description;
  size_t description_bytes;
  const mc_op_registry_t* registry;
  uint8_t* pool;
  size_t pool_bytes;
  uint32_t tensor_count;
  uint32_t op_count;
  uint32_t input_count;
  uint32_t output_count;
  const uint8_t* tensors; /* tensor table inside description */
  const uint8_t* ops;     /* operator records inside description (variable length) */
  const uint8_t* strings; /* operator names inside description */
  const uint8_t* inputs;  /* model input tensor ids */
  const uint8_t* outputs; /* model output tensor ids */
  uint32_t max_args;      /* the most arguments one operator takes */
  void** args;            /* the pointer table of one call: max_args entries at the pool's end */
} mc_graph_executor_t;

/* Parse and check a description against the registry and the pool size. The pool must be
 * aligned for pointers (a union with int64_t): its end holds the pointer table of a call. On any
 * failure the executor is left unusable (mc_graph_run refuses it). */
mc_status_t mc_graph_init(mc_graph_executor_t* graph, const uint8_t* description,
                          size_t description_bytes, const mc_op_registry_t* registry,
                          uint8_t* pool, size_t pool_bytes);
mc_status_t mc_graph_set_input(mc_graph_executor_t* graph, uint32_t index, const void* data,
                               size_t bytes);
mc_status_t mc_graph_run(mc_graph_executor_t* graph);
mc_status_t mc_graph_get_output(const mc_graph_executor_t* graph, uint32_t index, void* data,
                                size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* MICROCOMPILER_GRAPH_EXECUTOR_H_ */
