/* What the Zephyr platform offers the firmware's main() beyond platform.h. */
#ifndef MICROCOMPILER_ZEPHYR_PLATFORM_H_
#define MICROCOMPILER_ZEPHYR_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

/* Bytes of the calling thread's stack used so far (its high-water mark), or 0 when the build
 * lacks CONFIG_INIT_STACKS and CONFIG_THREAD_STACK_INFO. */
size_t mc_zephyr_stack_used_bytes(void);

/* Received bytes dropped because the receive ring buffer was full (0 in a healthy link). */
uint32_t mc_zephyr_rx_dropped_bytes(void);

#endif /* MICROCOMPILER_ZEPHYR_PLATFORM_H_ */
