/* The platform API (microcompiler/platform.h) on Arm CMSDK-based boards: MPS2 and MPS3 FPGA
 * images and their QEMU models.
 *
 * Console: the CMSDK APB UART. Timer: the CMSDK APB timer (a 32-bit down counter), or on SSE-300
 * systems, which have no fast CMSDK timer, the SSE system timer (a 64-bit up counter).
 *
 * Nothing here is board-specific: the project's build passes the board's addresses and clocks
 * as compile definitions (generated from boards/<board>.toml):
 *   MC_UART_BASE, MC_UART_CLOCK_HZ, MC_UART_BAUD     the console UART
 *   MC_TIMER_CMSDK=1 or MC_TIMER_SSE_SYSTEM=1          which timer driver
 *   MC_TIMER_BASE, MC_TIMER_HZ                         the timer
 *   MC_TIMER_COUNTER_BASE                              the system counter (SSE system timer only)
 * No interrupts are used: everything polls.
 */
#include <stddef.h>
#include <stdint.h>

#include "microcompiler/platform.h"
#include "microcompiler/report.h"

#if !defined(MC_UART_BASE) || !defined(MC_UART_CLOCK_HZ) || !defined(MC_UART_BAUD)
#error "define MC_UART_BASE, MC_UART_CLOCK_HZ and MC_UART_BAUD (the project's CMakeLists.txt does)"
#endif
#if !defined(MC_TIMER_BASE) || !defined(MC_TIMER_HZ)
#error "define MC_TIMER_BASE and MC_TIMER_HZ (the project's CMakeLists.txt does)"
#endif
#if defined(MC_TIMER_CMSDK) == defined(MC_TIMER_SSE_SYSTEM)
#error "define exactly one of MC_TIMER_CMSDK and MC_TIMER_SSE_SYSTEM"
#endif

#define REG32(address) (*(volatile uint32_t*)(uintptr_t)(address))

/* ---- CMSDK APB UART ---- */
#define UART_DATA REG32(MC_UART_BASE + 0x00u)
#define UART_STATE REG32(MC_UART_BASE + 0x04u)
#define UART_CTRL REG32(MC_UART_BASE + 0x08u)
#define UART_BAUDDIV REG32(MC_UART_BASE + 0x10u)
#define UART_STATE_TX_FULL 0x1u
#define UART_STATE_RX_FULL 0x2u
#define UART_CTRL_TX_ENABLE 0x1u
#define UART_CTRL_RX_ENABLE 0x2u
#define UART_MIN_BAUDDIV 16u /* the smallest divisor the UART accepts */

static void uart_init(void) {
  uint32_t divisor = (uint32_t)(MC_UART_CLOCK_HZ) / (uint32_t)(MC_UART_BAUD);
  UART_CTRL = 0u;
  UART_BAUDDIV = divisor < UART_MIN_BAUDDIV ? UART_MIN_BAUDDIV : divisor;
  UART_CTRL = UART_CTRL_TX_ENABLE | UART_CTRL_RX_ENABLE;
}

/* ---- Timer: a free-running count since init, plus a measurement start/stop ---- */
#if defined(MC_TIMER_CMSDK)
/* CMSDK APB timer: counts down from RELOAD to 0 at MC_TIMER_HZ, then reloads and sets
 * INTSTATUS (when CTRL.IRQ_ENABLE is set; the NVIC line stays disabled, so nothing fires). */
#define TIMER_CTRL REG32(MC_TIMER_BASE + 0x00u)
#define TIMER_VALUE REG32(MC_TIMER_BASE + 0x04u)
#define TIMER_RELOAD REG32(MC_TIMER_BASE + 0x08u)
#define TIMER_INTSTATUS REG32(MC_TIMER_BASE + 0x0Cu)
#define TIMER_CTRL_ENABLE 0x1u
#define TIMER_CTRL_IRQ_ENABLE 0x8u

static void timer_init(void) {
  TIMER_CTRL = 0u;
  TIMER_RELOAD = 0xFFFFFFFFu;
  TIMER_VALUE = 0xFFFFFFFFu;
  TIMER_INTSTATUS = 1u;
  TIMER_CTRL = TIMER_CTRL_ENABLE | TIMER_CTRL_IRQ_ENABLE;
}

/* Ticks elapsed modulo 2^32 (an up count built from the down counter). */
static uint32_t timer_now32(void) { return 0xFFFFFFFFu - TIMER_VALUE; }

mc_status_t mc_platform_timer_start(void) {
  /* Restart the count so that a wrap (after 2^32 ticks) shows as INTSTATUS. */
  TIMER_VALUE = 0xFFFFFFFFu;
  TIMER_INTSTATUS = 1u;
  return (TIMER_CTRL & TIMER_CTRL_ENABLE) != 0u ? MC_OK : MC_ERR_TIMER;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  uint32_t now = timer_now32();
  if (elapsed_ticks == NULL) return MC_ERR_INVALID_ARGUMENT;
  if (TIMER_INTSTATUS != 0u) return MC_ERR_TIMER; /* wrapped: longer than 2^32 ticks */
  *elapsed_ticks = now;
  return MC_OK;
}

#else /* MC_TIMER_SSE_SYSTEM */
/* SSE system timer frame (CNTPCT: the 64-bit system count) and system counter control frame. */
#ifndef MC_TIMER_COUNTER_BASE
#error "the SSE system timer needs MC_TIMER_COUNTER_BASE (the system counter control frame)"
#endif
#define TIMER_CNTPCT_LO REG32(MC_TIMER_BASE + 0x00u)
#define TIMER_CNTPCT_HI REG32(MC_TIMER_BASE + 0x04u)
#define COUNTER_CNTCR REG32(MC_TIMER_COUNTER_BASE + 0x00u)
#define COUNTER_CNTCR_ENABLE 0x1u

static uint64_t g_timer_start;

static void timer_init(void) { COUNTER_CNTCR |= COUNTER_CNTCR_ENABLE; }

static uint64_t timer_now64(void) {
  uint32_t high, low;
  do { /* re-read if the low word wrapped between the two reads */
    high = TIMER_CNTPCT_HI;
    low = TIMER_CNTPCT_LO;
  } while (high != TIMER_CNTPCT_HI);
  return ((uint64_t)high << 32) | low;
}

static uint32_t timer_now32(void) { return (uint32_t)timer_now64(); }

mc_status_t mc_platform_timer_start(void) {
  g_timer_start = timer_now64();
  return (COUNTER_CNTCR & COUNTER_CNTCR_ENABLE) != 0u ? MC_OK : MC_ERR_TIMER;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  uint64_t now = timer_now64();
  if (elapsed_ticks == NULL) return MC_ERR_INVALID_ARGUMENT;
  *elapsed_ticks = now - g_timer_start;
  return MC_OK;
}
#endif

uint32_t mc_platform_timer_hz(void) { return (uint32_t)(MC_TIMER_HZ); }

/* ---- The rest of the platform API ---- */
mc_status_t mc_platform_init(void) {
  uart_init();
  timer_init();
  return MC_OK;
}

mc_status_t mc_platform_write(const uint8_t* data, size_t len) {
  size_t i;
  if (data == NULL && len != 0u) return MC_ERR_INVALID_ARGUMENT;
  for (i = 0; i < len; ++i) {
    while ((UART_STATE & UART_STATE_TX_FULL) != 0u) {
    }
    UART_DATA = data[i];
  }
  return MC_OK;
}

mc_status_t mc_platform_read_byte(uint8_t* byte, uint32_t timeout_us) {
  /* Wait in timer ticks, summing small modular steps so the wait survives counter wraps. */
  const uint64_t ticks_per_us = (uint64_t)(MC_TIMER_HZ) / 1000000u;
  const uint64_t budget = timeout_us == UINT32_MAX ? UINT64_MAX
                                                   : (uint64_t)timeout_us * (ticks_per_us ? ticks_per_us : 1u);
  uint64_t waited = 0;
  uint32_t last = timer_now32();
  if (byte == NULL) return MC_ERR_INVALID_ARGUMENT;
  for (;;) {
    uint32_t now;
    if ((UART_STATE & UART_STATE_RX_FULL) != 0u) {
      *byte = (uint8_t)UART_DATA;
      return MC_OK;
    }
    if (waited >= budget) return MC_ERR_IO;
    now = timer_now32();
    waited += (uint32_t)(now - last);
    last = now;
  }
}

mc_status_t mc_platform_random(uint8_t* buf, size_t len) {
  /* No hardware RNG on these boards: xorshift32 stirred with the timer. Unpredictable enough
   * for test data and nonces on a bench, not for cryptography. */
  static uint32_t state = 0x9E3779B9u;
  size_t i;
  if (buf == NULL && len != 0u) return MC_ERR_INVALID_ARGUMENT;
  state ^= timer_now32();
  for (i = 0; i < len; ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    buf[i] = (uint8_t)(state >> 24);
  }
  return MC_OK;
}

void mc_platform_abort(mc_status_t status) {
  mc_report_abort(status);
  for (;;) {
    __asm volatile("cpsid i\n wfi" ::: "memory");
  }
}
