/* What a bare-metal platform family offers the firmware's main() beyond platform.h.
 *
 * Implemented by crt/platform/<family>/startup.c together with the project's linker script,
 * which defines the stack region (__stack_start .. __stack_end).
 */
#ifndef MICROCOMPILER_BAREMETAL_H_
#define MICROCOMPILER_BAREMETAL_H_

#include <stddef.h>

/* Bytes of the stack region ever used since reset (the reset handler paints the free stack
 * with a pattern; this finds the deepest word overwritten). */
size_t mc_stack_used_bytes(void);

/* Bytes of the stack region (its size in the linker script). */
size_t mc_stack_size_bytes(void);

#endif /* MICROCOMPILER_BAREMETAL_H_ */
