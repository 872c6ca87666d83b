/* Just enough of Zephyr's API for crt/platform/zephyr/platform.c to compile and run on this
 * computer (tests/test_mlperf_zephyr.py), with the signatures of zephyrproject-rtos/zephyr
 * (include/zephyr/kernel.h, sys_clock.h, sys/time_units.h, device.h, drivers/uart.h,
 * sys/ring_buffer.h, random/random.h, timing/timing.h; Zephyr 3.7 and 4.x). Not Zephyr: the
 * clocks and the console are fakes driven by fake_zephyr.c. Every zephyr/... header the platform
 * includes is this one.
 */
#ifndef FAKE_ZEPHYR_KERNEL_H_
#define FAKE_ZEPHYR_KERNEL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- devicetree and devices ---- */
struct device {
  const char* name;
};
extern const struct device fake_console_device;
#define DT_HAS_CHOSEN(node) 1
#define DT_CHOSEN(node) node
#define DEVICE_DT_GET(node) (&fake_console_device)
bool device_is_ready(const struct device* dev);

/* ---- UART (interrupt-driven and polling) ---- */
typedef void (*uart_irq_callback_user_data_t)(const struct device* dev, void* user_data);
int uart_irq_callback_user_data_set(const struct device* dev, uart_irq_callback_user_data_t cb, void* user_data);
void uart_irq_rx_enable(const struct device* dev);
int uart_irq_update(const struct device* dev);
int uart_irq_rx_ready(const struct device* dev);
int uart_fifo_read(const struct device* dev, uint8_t* rx_data, const int size);
void uart_poll_out(const struct device* dev, unsigned char out_char);

/* ---- interrupts (zephyr/irq.h, which zephyr/kernel.h includes) ---- */
unsigned int irq_lock(void);
void irq_unlock(unsigned int key);

/* ---- timeouts, semaphores ---- */
typedef struct {
  int64_t ticks;
} k_timeout_t;
#define K_TICKS_FOREVER ((int64_t)-1)
#define K_FOREVER ((k_timeout_t){K_TICKS_FOREVER})
#define K_TICKS(t) ((k_timeout_t){(int64_t)(t)})
#define K_MSEC(ms) K_TICKS(ms) /* Zephyr converts to ticks; the fake sleeps no time anyway */
struct k_sem {
  unsigned int count;
  unsigned int limit;
};
#define K_SEM_DEFINE(name, initial_count, count_limit) struct k_sem name = {initial_count, count_limit}
void k_sem_give(struct k_sem* sem);
int k_sem_take(struct k_sem* sem, k_timeout_t timeout);

/* ---- ring buffer ---- */
struct ring_buf {
  uint8_t* buffer;
  uint32_t size;
  uint32_t head;
  uint32_t tail;
};
#define RING_BUF_DECLARE(name, size8)            \
  static uint8_t name##_storage[size8];          \
  struct ring_buf name = {name##_storage, size8, 0, 0}
uint32_t ring_buf_put(struct ring_buf* buf, const uint8_t* data, uint32_t size);
uint32_t ring_buf_get(struct ring_buf* buf, uint8_t* data, uint32_t size);

/* ---- clocks ---- */
uint32_t k_cycle_get_32(void);
uint64_t k_cycle_get_64(void);
int64_t k_uptime_ticks(void);
int sys_clock_hw_cycles_per_sec(void);
uint64_t k_ticks_to_cyc_floor64(uint64_t t);
uint64_t k_us_to_ticks_ceil64(uint64_t t);

/* ---- timing API (CONFIG_TIMING_FUNCTIONS) ---- */
typedef uint64_t timing_t;
void timing_init(void);
void timing_start(void);
timing_t timing_counter_get(void);
uint64_t timing_cycles_get(volatile timing_t* const start, volatile timing_t* const end);
uint64_t timing_freq_get(void);

/* ---- threads, random, panic ---- */
struct _thread_stack_info {
  uintptr_t start;
  size_t size;
  size_t delta;
};
struct k_thread {
  struct _thread_stack_info stack_info;
};
typedef struct k_thread* k_tid_t;
k_tid_t k_current_get(void);
int k_thread_stack_space_get(const struct k_thread* thread, size_t* unused_ptr);
int32_t k_sleep(k_timeout_t timeout);
void sys_rand_get(void* dst, size_t len);
void fake_k_panic(void);
#define k_panic() fake_k_panic()

#endif /* FAKE_ZEPHYR_KERNEL_H_ */
