/* table_functions_int8: graph description and operator registry for the graph executor. Generated. */
#ifndef TABLE_FUNCTIONS_INT8_GRAPH_H_
#define TABLE_FUNCTIONS_INT8_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/graph_executor.h"

/* Bytes of the pool the graph executor needs: activations, inputs and outputs, then the pointer
 * table of one operator call. The state the model keeps across inferences is not in it:
 * table_functions_int8_reset() (in table_functions_int8.h) restores it. */
#define TABLE_FUNCTIONS_INT8_GRAPH_POOL_BYTES 3088
/* The most tensor arguments one operator function takes (table_functions_int8_registry.max_args). */
#define TABLE_FUNCTIONS_INT8_GRAPH_MAX_ARGS 2

extern const uint8_t table_functions_int8_graph[];
extern const size_t table_functions_int8_graph_bytes;
extern const mc_op_registry_t table_functions_int8_registry;

#endif /* TABLE_FUNCTIONS_INT8_GRAPH_H_ */
