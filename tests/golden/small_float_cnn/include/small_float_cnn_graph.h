/* small_float_cnn: graph description and operator registry for the graph executor. Generated. */
#ifndef SMALL_FLOAT_CNN_GRAPH_H_
#define SMALL_FLOAT_CNN_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/graph_executor.h"

/* Bytes of the pool the graph executor needs: activations, inputs and outputs, then the pointer
 * table of one operator call. The state the model keeps across inferences is not in it:
 * small_float_cnn_reset() (in small_float_cnn.h) restores it. */
#define SMALL_FLOAT_CNN_GRAPH_POOL_BYTES 864
/* The most tensor arguments one operator function takes (small_float_cnn_registry.max_args). */
#define SMALL_FLOAT_CNN_GRAPH_MAX_ARGS 2

extern const uint8_t small_float_cnn_graph[];
extern const size_t small_float_cnn_graph_bytes;
extern const mc_op_registry_t small_float_cnn_registry;

#endif /* SMALL_FLOAT_CNN_GRAPH_H_ */
