/* small_float_cnn: graph description and operator registry for the graph executor. Generated. */
#ifndef SMALL_FLOAT_CNN_GRAPH_H_
#define SMALL_FLOAT_CNN_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/graph_executor.h"

/* Bytes of the pool the graph executor needs: activations, inputs and outputs. The state the model
 * keeps across inferences is not in it: small_float_cnn_reset() (in small_float_cnn.h) restores it. */
#define SMALL_FLOAT_CNN_GRAPH_POOL_BYTES 848

extern const uint8_t small_float_cnn_graph[];
extern const size_t small_float_cnn_graph_bytes;
extern const mc_op_registry_t small_float_cnn_registry;

#endif /* SMALL_FLOAT_CNN_GRAPH_H_ */
