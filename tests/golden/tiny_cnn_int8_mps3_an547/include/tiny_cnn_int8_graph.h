/* tiny_cnn_int8: graph description and operator registry for the graph executor. Generated. */
#ifndef TINY_CNN_INT8_GRAPH_H_
#define TINY_CNN_INT8_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/graph_executor.h"

/* Bytes of the pool the graph executor needs: activations, inputs and outputs, then the pointer
 * table of one operator call. The state the model keeps across inferences is not in it:
 * tiny_cnn_int8_reset() (in tiny_cnn_int8.h) restores it. */
#define TINY_CNN_INT8_GRAPH_POOL_BYTES 1816
/* The most tensor arguments one operator function takes (tiny_cnn_int8_registry.max_args). */
#define TINY_CNN_INT8_GRAPH_MAX_ARGS 2

extern const uint8_t tiny_cnn_int8_graph[];
extern const size_t tiny_cnn_int8_graph_bytes;
extern const mc_op_registry_t tiny_cnn_int8_registry;

#endif /* TINY_CNN_INT8_GRAPH_H_ */
