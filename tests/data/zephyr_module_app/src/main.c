/* Runs the module's model, hello_world_int8, on a sweep of inputs and prints each output with
 * its time from the module's platform hooks; the test compares the outputs with TFLite Micro's. */
#include <stdint.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>

#include "hello_world_int8.h"
#include "microcompiler/platform.h"

#define FIRST_INPUT (-128)
#define LAST_INPUT 127
#define INPUT_STEP 17

int main(void) {
  int8_t input[1];
  int8_t output[1];
  int value;
  if (mc_platform_init() != MC_OK) {
    printk("app: platform init failed\n");
    return 0;
  }
  for (value = FIRST_INPUT; value <= LAST_INPUT; value += INPUT_STEP) {
    uint64_t ticks = 0;
    input[0] = (int8_t)value;
    (void)mc_platform_timer_start();
    (void)hello_world_int8_run(input, output);
    (void)mc_platform_timer_stop(&ticks);
    printk("app: %d -> %d in %u ticks\n", value, output[0], (unsigned int)ticks);
  }
  printk("app: done at %u Hz\n", (unsigned int)mc_platform_timer_hz());
  return 0;
}
