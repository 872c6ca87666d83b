/* The fakes behind zephyr/kernel.h: crt/platform/zephyr/platform.c on this computer
 * (tests/test_mlperf_zephyr.py).
 *
 * Time: one true 64-bit cycle count at FAKE_HZ. The hardware counters are views of it as Zephyr
 * gives them: k_cycle_get_32() its low 32 bits, k_cycle_get_64() all of it, k_uptime_ticks() the
 * kernel's tick count (CYCLES_PER_TICK cycles a tick), and the timing API a 32-bit DWT-like count
 * with Zephyr's Cortex-M arch_timing_cycles_get() ((uint32_t)end - (uint32_t)start).
 * The console: uart_poll_out() writes to stdout; received bytes come from stdin, handed to the
 * platform's interrupt handler when it waits on its semaphore (the end of stdin ends the program);
 * what was written is flushed before each wait, so a host can hold a conversation with it (RPC).
 *
 * -DFAKE_ZEPHYR_TIMER_TEST: main() measures spans across the counters' wraps and prints
 * "span S elapsed E" lines. Otherwise main() is the generated application's.
 */
#define _POSIX_C_SOURCE 200809L /* read() */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zephyr/kernel.h"

#define FAKE_HZ 25000000u
#define CYCLES_PER_TICK 250000u      /* a 100 Hz kernel tick */
#define CYCLES_PER_CLOCK_READ 100u   /* the application's clock reads advance time (not in the timer test) */
#define FIFO_BYTES 16

const struct device fake_console_device = {"fake console"};

static uint64_t g_cycles;
static uint64_t g_advance = CYCLES_PER_CLOCK_READ;
static uart_irq_callback_user_data_t g_isr;
static void* g_isr_data;
static uint8_t g_fifo[FIFO_BYTES];
static int g_fifo_length;
static struct k_thread g_main_thread = {{0, 4096, 0}};

static uint64_t now(void) {
  g_cycles += g_advance;
  return g_cycles;
}

bool device_is_ready(const struct device* dev) { return dev == &fake_console_device; }

int uart_irq_callback_user_data_set(const struct device* dev, uart_irq_callback_user_data_t cb, void* user_data) {
  (void)dev;
  g_isr = cb;
  g_isr_data = user_data;
  return 0;
}

void uart_irq_rx_enable(const struct device* dev) { (void)dev; }
unsigned int irq_lock(void) { return 0u; } /* one thread, no interrupts: nothing to hold off */
void irq_unlock(unsigned int key) { (void)key; }
int uart_irq_update(const struct device* dev) { (void)dev; return 1; }
int uart_irq_rx_ready(const struct device* dev) { (void)dev; return g_fifo_length > 0; }

int uart_fifo_read(const struct device* dev, uint8_t* rx_data, const int size) {
  int n = size < g_fifo_length ? size : g_fifo_length;
  (void)dev;
  memcpy(rx_data, g_fifo, (size_t)n);
  memmove(g_fifo, g_fifo + n, (size_t)(g_fifo_length - n));
  g_fifo_length -= n;
  return n;
}

void uart_poll_out(const struct device* dev, unsigned char out_char) {
  (void)dev;
  putchar(out_char);
}

void k_sem_give(struct k_sem* sem) {
  if (sem->count < sem->limit) ++sem->count;
}

/* The reader waits: the next bytes of stdin "arrive" and the UART interrupt runs. */
int k_sem_take(struct k_sem* sem, k_timeout_t timeout) {
  ssize_t n;
  (void)timeout;
  if (sem->count > 0u) {
    --sem->count;
    return 0;
  }
  fflush(stdout); /* the replies so far reach the host before the device waits for more */
  n = read(STDIN_FILENO, g_fifo + g_fifo_length, (size_t)(FIFO_BYTES - g_fifo_length));
  if (n > 0) g_fifo_length += (int)n;
  if (g_fifo_length == 0) {
    fflush(stdout);
    exit(0); /* the commands are done */
  }
  if (g_isr != NULL) g_isr(&fake_console_device, g_isr_data);
  if (sem->count > 0u) --sem->count;
  return 0;
}

uint32_t ring_buf_put(struct ring_buf* buf, const uint8_t* data, uint32_t size) {
  uint32_t n = 0;
  while (n < size && buf->head - buf->tail < buf->size) buf->buffer[buf->head++ % buf->size] = data[n++];
  return n;
}

uint32_t ring_buf_get(struct ring_buf* buf, uint8_t* data, uint32_t size) {
  uint32_t n = 0;
  while (n < size && buf->tail != buf->head) data[n++] = buf->buffer[buf->tail++ % buf->size];
  return n;
}

uint32_t k_cycle_get_32(void) { return (uint32_t)now(); }
uint64_t k_cycle_get_64(void) { return now(); }
int64_t k_uptime_ticks(void) { return (int64_t)(g_cycles / CYCLES_PER_TICK); }
int sys_clock_hw_cycles_per_sec(void) { return (int)FAKE_HZ; }
uint64_t k_ticks_to_cyc_floor64(uint64_t t) { return t * CYCLES_PER_TICK; }
uint64_t k_us_to_ticks_ceil64(uint64_t t) { return (t * (FAKE_HZ / 1000000u) + CYCLES_PER_TICK - 1u) / CYCLES_PER_TICK; }

void timing_init(void) {}
void timing_start(void) {}
timing_t timing_counter_get(void) { return (timing_t)(uint32_t)now(); }
uint64_t timing_cycles_get(volatile timing_t* const start, volatile timing_t* const end) {
  return (uint32_t)*end - (uint32_t)*start;
}
uint64_t timing_freq_get(void) { return FAKE_HZ; }

k_tid_t k_current_get(void) { return &g_main_thread; }
int k_thread_stack_space_get(const struct k_thread* thread, size_t* unused_ptr) {
  *unused_ptr = thread->stack_info.size / 2u;
  return 0;
}
int32_t k_sleep(k_timeout_t timeout) {
  (void)timeout;
  return 0;
}
void sys_rand_get(void* dst, size_t len) { memset(dst, 0x5a, len); }
void fake_k_panic(void) {
  fflush(stdout);
  abort();
}

#ifdef FAKE_ZEPHYR_TIMER_TEST
#include "microcompiler/platform.h"

/* Measure `span` cycles that start at `start` on the true count. */
static void measure(uint64_t start, uint64_t span) {
  uint64_t elapsed = 0;
  g_cycles = start;
  if (mc_platform_timer_start() != MC_OK) abort();
  g_cycles = start + span;
  if (mc_platform_timer_stop(&elapsed) != MC_OK) abort();
  printf("span %llu elapsed %llu\n", (unsigned long long)span, (unsigned long long)elapsed);
}

int main(void) {
  const uint64_t wrap = (uint64_t)1 << 32;
  if (mc_platform_init() != MC_OK) return 1;
  g_advance = 0; /* the spans are exact */
  printf("hz %u\n", (unsigned)mc_platform_timer_hz());
  measure(0u, 1000u);
  measure(wrap - 256u, 512u);       /* across the 32-bit wrap */
  measure(3u * wrap - 7u, wrap - 1u); /* just under one wrap, across one */
#if !defined(CONFIG_TIMING_FUNCTIONS)
  measure(wrap - 256u, 5000000000u);    /* 200 s: longer than the 32-bit count (172 s) */
  measure(12345u, 3u * wrap + 98765u);  /* several wraps */
#endif
  return 0;
}
#endif
