/* The platform API (microcompiler/platform.h) on Zephyr, for every board Zephyr supports.
 *
 * Link: the console UART (devicetree chosen node zephyr,console). Bytes arrive by interrupt
 * into a ring buffer, so nothing is lost while the model runs and interrupts are never held
 * off; bytes leave with uart_poll_out().
 *
 * Timer: with CONFIG_TIMING_FUNCTIONS (hardware boards: the Cortex-M DWT cycle counter or the
 * SoC's timing counter), the timing API; otherwise the system timer's hardware cycle counter
 * (k_cycle_get_64() where the driver has a 64-bit one, else k_cycle_get_32() with its wraps
 * recovered from the kernel's 64-bit tick count). Emulated boards use the latter: QEMU does not
 * model the DWT cycle counter.
 *
 * Random bytes: sys_rand_get() (a hardware entropy driver where the project enables one, else
 * Zephyr's timer-based generator). Abort: prints MC-ABORT and k_panic().
 *
 * Verified against the Zephyr 3.7 LTS and 4.x APIs; see docs/zephyr.md.
 */
#include <errno.h>

#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/kernel.h>
#include <zephyr/random/random.h>
#include <zephyr/sys/ring_buffer.h>
#if defined(CONFIG_TIMING_FUNCTIONS)
#include <zephyr/timing/timing.h>
#endif

#include "microcompiler/platform.h"
#include "microcompiler/report.h"
#include "zephyr_platform.h"

#if !DT_HAS_CHOSEN(zephyr_console)
#error "the board's devicetree has no zephyr,console chosen node: microcompiler talks over it"
#endif

/* Bytes received and not yet read. The host sends at most one request frame (payload plus
 * escaping) before it waits for the answer, so this holds several frames. Override with -D. */
#ifndef MC_ZEPHYR_RX_BUFFER_BYTES
#define MC_ZEPHYR_RX_BUFFER_BYTES 4096
#endif
/* Bytes the UART interrupt handler moves from the UART FIFO per read. */
#define RX_CHUNK_BYTES 16

static const struct device* const g_console = DEVICE_DT_GET(DT_CHOSEN(zephyr_console));

/* One writer (the UART interrupt handler) and one reader (the thread in read_byte): Zephyr's
 * ring buffer needs a lock only for several writers or several readers. */
RING_BUF_DECLARE(g_rx_ring, MC_ZEPHYR_RX_BUFFER_BYTES);
/* Given by the interrupt handler when bytes arrive; the reader waits on it. */
K_SEM_DEFINE(g_rx_arrived, 0, 1);
static volatile uint32_t g_rx_dropped_bytes;

static void console_isr(const struct device* dev, void* user_data) {
  uint8_t chunk[RX_CHUNK_BYTES];
  int got;
  (void)user_data;
  if (!uart_irq_update(dev) || !uart_irq_rx_ready(dev)) return;
  /* Drain the FIFO: "RX ready" may be edge-triggered. */
  do {
    got = uart_fifo_read(dev, chunk, (int)sizeof(chunk));
    if (got > 0) {
      uint32_t stored = ring_buf_put(&g_rx_ring, chunk, (uint32_t)got);
      if (stored < (uint32_t)got) g_rx_dropped_bytes += (uint32_t)got - stored;
      k_sem_give(&g_rx_arrived);
    }
  } while (got == (int)sizeof(chunk));
}

/* ---- Timer ---- */
#if defined(CONFIG_TIMING_FUNCTIONS)
static timing_t g_timer_start;

static void timer_init(void) {
  timing_init();
  timing_start();
}

mc_status_t mc_platform_timer_start(void) {
  g_timer_start = timing_counter_get();
  return MC_OK;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  timing_t end = timing_counter_get();
  if (elapsed_ticks == NULL) return MC_ERR_INVALID_ARGUMENT;
  *elapsed_ticks = timing_cycles_get(&g_timer_start, &end);
  return MC_OK;
}

uint32_t mc_platform_timer_hz(void) { return (uint32_t)timing_freq_get(); }

#elif defined(CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER)
static uint64_t g_timer_start;

static void timer_init(void) {}

mc_status_t mc_platform_timer_start(void) {
  g_timer_start = k_cycle_get_64();
  return MC_OK;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  uint64_t end = k_cycle_get_64();
  if (elapsed_ticks == NULL) return MC_ERR_INVALID_ARGUMENT;
  *elapsed_ticks = end - g_timer_start;
  return MC_OK;
}

uint32_t mc_platform_timer_hz(void) { return (uint32_t)sys_clock_hw_cycles_per_sec(); }

#else
static uint32_t g_timer_start_cycles;
static int64_t g_timer_start_ticks;

static void timer_init(void) {}

mc_status_t mc_platform_timer_start(void) {
  g_timer_start_ticks = k_uptime_ticks();
  g_timer_start_cycles = k_cycle_get_32();
  return MC_OK;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  const uint32_t end_cycles = k_cycle_get_32();
  const int64_t end_ticks = k_uptime_ticks();
  const uint64_t counter_span = (uint64_t)1 << 32;
  const uint32_t cycles_mod_span = end_cycles - g_timer_start_cycles;
  uint64_t approximate_cycles;
  if (elapsed_ticks == NULL) return MC_ERR_INVALID_ARGUMENT;
  /* The 32-bit counter wraps (after 2^32 cycles); the tick count says roughly how long it
   * was, precise to a tick, which is far less than half a wrap. */
  approximate_cycles = k_ticks_to_cyc_floor64((uint64_t)(end_ticks - g_timer_start_ticks));
  if (approximate_cycles > cycles_mod_span) {
    uint64_t wraps = (approximate_cycles - cycles_mod_span + counter_span / 2u) / counter_span;
    *elapsed_ticks = cycles_mod_span + wraps * counter_span;
  } else {
    *elapsed_ticks = cycles_mod_span;
  }
  return MC_OK;
}

uint32_t mc_platform_timer_hz(void) { return (uint32_t)sys_clock_hw_cycles_per_sec(); }
#endif

/* ---- Link ---- */
mc_status_t mc_platform_init(void) {
  int status;
  unsigned int key;
  if (!device_is_ready(g_console)) return MC_ERR_IO;
  status = uart_irq_callback_user_data_set(g_console, console_isr, NULL);
  if (status == -ENOTSUP || status == -ENOSYS) return MC_ERR_UNSUPPORTED; /* no CONFIG_UART_INTERRUPT_DRIVEN */
  if (status != 0) return MC_ERR_IO;
  /* The host may start sending while Zephyr boots: its driver enables the receiver before main()
   * runs. A byte that arrived before the receive interrupt was enabled waits in the UART, and on a
   * UART whose receive interrupt fires when a byte arrives (the CMSDK APB UART of the MPS2/MPS3
   * boards) enabling the interrupt later raises none for it: the UART takes no other byte until
   * that one is read, so the host's request would never get through. Take it as the interrupt
   * would have, with interrupts off as in an interrupt handler. */
  key = irq_lock();
  uart_irq_rx_enable(g_console);
  console_isr(g_console, NULL);
  irq_unlock(key);
  timer_init();
  return MC_OK;
}

mc_status_t mc_platform_write(const uint8_t* data, size_t len) {
  size_t i;
  if (data == NULL && len != 0u) return MC_ERR_INVALID_ARGUMENT;
  for (i = 0; i < len; ++i) uart_poll_out(g_console, data[i]);
  return MC_OK;
}

mc_status_t mc_platform_read_byte(uint8_t* byte, uint32_t timeout_us) {
  const int64_t deadline = timeout_us == UINT32_MAX
                               ? 0
                               : k_uptime_ticks() + (int64_t)k_us_to_ticks_ceil64(timeout_us);
  if (byte == NULL) return MC_ERR_INVALID_ARGUMENT;
  for (;;) {
    k_timeout_t wait;
    if (ring_buf_get(&g_rx_ring, byte, 1u) == 1u) return MC_OK;
    if (timeout_us == UINT32_MAX) {
      wait = K_FOREVER;
    } else {
      const int64_t remaining = deadline - k_uptime_ticks();
      if (remaining <= 0) return MC_ERR_IO;
      wait = K_TICKS(remaining);
    }
    /* A give that raced with the check above is not lost: the semaphore keeps it. */
    (void)k_sem_take(&g_rx_arrived, wait);
  }
}

/* ---- The rest ---- */
mc_status_t mc_platform_random(uint8_t* buf, size_t len) {
  if (buf == NULL && len != 0u) return MC_ERR_INVALID_ARGUMENT;
  sys_rand_get(buf, len);
  return MC_OK;
}

void mc_platform_abort(mc_status_t status) {
  mc_report_abort(status);
  k_panic();
  for (;;) {
    k_sleep(K_FOREVER); /* not reached: k_panic() halts the system */
  }
}

uint32_t mc_zephyr_rx_dropped_bytes(void) { return g_rx_dropped_bytes; }

size_t mc_zephyr_stack_used_bytes(void) {
#if defined(CONFIG_INIT_STACKS) && defined(CONFIG_THREAD_STACK_INFO)
  size_t unused = 0;
  const struct k_thread* self = k_current_get();
  if (k_thread_stack_space_get(self, &unused) != 0) return 0;
  return self->stack_info.size - unused;
#else
  return 0;
#endif
}
