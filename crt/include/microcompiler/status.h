/* Error codes shared by the generated code, the runtime and the host tools. */
#ifndef MICROCOMPILER_STATUS_H_
#define MICROCOMPILER_STATUS_H_

#include <stdint.h>

typedef int32_t mc_status_t;

#define MC_OK 0
#define MC_ERR_INVALID_ARGUMENT 1   /* a null pointer, a bad size or index */
#define MC_ERR_NOT_FOUND 2          /* a name missing from a registry */
#define MC_ERR_OUT_OF_MEMORY 3      /* a static pool is too small */
#define MC_ERR_BAD_GRAPH 4          /* a graph description that does not parse */
#define MC_ERR_UNSUPPORTED 5        /* a feature this build does not have */
#define MC_ERR_TIMER 6              /* the platform timer failed */
#define MC_ERR_IO 7                 /* the platform could not read or write */
#define MC_ERR_PROTOCOL 8           /* a malformed message */
#define MC_ERR_INTERNAL 9           /* a bug: please report it */
#define MC_STATUS_COUNT 10

/* A short human-readable name for a status code ("MC_ERR_NOT_FOUND"). */
const char* mc_status_name(mc_status_t status);

#endif /* MICROCOMPILER_STATUS_H_ */
