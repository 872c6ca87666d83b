/* The platform API: what a board (or an OS) implements for the runtime.
 *
 * One implementation per platform family lives in crt/platform/<family>/
 * (posix, cmsdk, zephyr). Everything else in crt/ and all generated code
 * calls only these functions, never a vendor API directly.
 */
#ifndef MICROCOMPILER_PLATFORM_H_
#define MICROCOMPILER_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/status.h"

/* For the runtime's own copy, fill and string-length loops (the reset handler's .data and .bss, the
 * report's texts): GCC at -O2 turns such a loop into a call of the C library's memcpy, memset or
 * strlen, which a standalone firmware needs nowhere else and whose fast versions weigh ~700 B of
 * flash (newlib's on the bare-metal boards). These loops run once or print a few bytes. */
#if defined(__GNUC__) && !defined(__clang__)
#define MC_PLAIN_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define MC_PLAIN_LOOPS
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bring up the console/serial link and the timer. Called once from main(). */
mc_status_t mc_platform_init(void);

/* Stop for good after an unrecoverable error. Must not return. */
void mc_platform_abort(mc_status_t status);

/* Write len bytes to the console/serial link; blocks until queued. */
mc_status_t mc_platform_write(const uint8_t* data, size_t len);

/* Read one byte from the serial link. Blocks up to timeout_us microseconds
 * (0 = poll once, UINT32_MAX = forever). Returns MC_OK, or MC_ERR_IO when no
 * byte arrived in time. */
mc_status_t mc_platform_read_byte(uint8_t* byte, uint32_t timeout_us);

/* A free-running timer: start, then stop to get the elapsed ticks. */
mc_status_t mc_platform_timer_start(void);
mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks);
/* Ticks per second of that timer. */
uint32_t mc_platform_timer_hz(void);

/* Fill buf with len random (or at least unpredictable) bytes. */
mc_status_t mc_platform_random(uint8_t* buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* MICROCOMPILER_PLATFORM_H_ */
