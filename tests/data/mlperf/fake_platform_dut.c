/* crt/src/mlperf_dut.c on the host, over a fake platform (tests/test_mlperf.py).
 *
 * Commands come from stdin, answers go to stdout. The fake timer behaves like the CMSDK one: a
 * 32-bit count at 25 MHz that reports MC_ERR_TIMER once a measurement passed 2^32 ticks (172 s).
 * Each inference takes INFERENCE_TICKS (120 s): a window of several inferences is longer than the
 * hardware count can measure, so only the software extension gets it right.
 * The fake model: output[i] = input[i % input size] (int8), enough to check conversions and scores;
 * its outputs reach the output buffer only in finish(), so the DUT must call it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "microcompiler/mlperf_dut.h"
#include "microcompiler/platform.h"

#define TIMER_HZ 25000000u
#define INFERENCE_TICKS 3000000000ull
#define COUNTER_RANGE 4294967296ull

static uint64_t g_now_ticks;
static uint64_t g_start_ticks;

mc_status_t mc_platform_init(void) { return MC_OK; }

void mc_platform_abort(mc_status_t status) {
  fprintf(stderr, "abort %d\n", (int)status);
  exit(1);
}

mc_status_t mc_platform_write(const uint8_t* data, size_t len) {
  return fwrite(data, 1, len, stdout) == len ? MC_OK : MC_ERR_IO;
}

mc_status_t mc_platform_read_byte(uint8_t* byte, uint32_t timeout_us) {
  int c = getchar();
  (void)timeout_us;
  if (c == EOF) return MC_ERR_IO;
  *byte = (uint8_t)c;
  return MC_OK;
}

mc_status_t mc_platform_timer_start(void) {
  g_start_ticks = g_now_ticks;
  return MC_OK;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  uint64_t elapsed = g_now_ticks - g_start_ticks;
  if (elapsed >= COUNTER_RANGE) return MC_ERR_TIMER; /* the 32-bit count wrapped */
  *elapsed_ticks = elapsed;
  return MC_OK;
}

uint32_t mc_platform_timer_hz(void) { return TIMER_HZ; }

mc_status_t mc_platform_random(uint8_t* buf, size_t len) {
  size_t i;
  for (i = 0; i < len; ++i) buf[i] = (uint8_t)i;
  return MC_OK;
}

#ifndef FORMAT
#define FORMAT MC_MLPERF_INPUT_INT8
#define SCORES MC_MLPERF_SCORES_OUTPUT
#define ELEMENTS 490u
#define OUTPUTS 12u
#endif

static uint8_t g_load[ELEMENTS * (FORMAT == MC_MLPERF_INPUT_FLOAT32 ? 4u : 1u)];
static int8_t g_input[ELEMENTS];
static int8_t g_output[OUTPUTS];

static int8_t g_result[OUTPUTS]; /* the inference's own result, copied to g_output by finish() */

static mc_status_t fake_prepare(size_t step) {
  (void)step;
  return MC_OK;
}

static mc_status_t fake_infer(size_t step) {
  size_t i;
  (void)step;
  for (i = 0; i < OUTPUTS; ++i) g_result[i] = g_input[i % ELEMENTS];
  g_now_ticks += INFERENCE_TICKS;
  return MC_OK;
}

static mc_status_t fake_finish(void) {
  size_t i;
  for (i = 0; i < OUTPUTS; ++i) g_output[i] = g_result[i]; /* the scores are read only after finish() */
  return MC_OK;
}

static const void* const g_outputs[] = {g_output};
static const size_t g_output_bytes[] = {sizeof(g_output)};
static void fake_reset(void) {}

static const mc_runner_t g_runner = {fake_prepare, fake_infer, fake_finish, fake_reset, 1u, g_outputs, g_output_bytes, NULL};

static const mc_mlperf_dut_config_t g_config = {
    "fake", "kws01", FORMAT, SCORES, g_load, sizeof(g_load), g_input, ELEMENTS, 0.5f, 3, g_output, OUTPUTS,
    0.25f, -2, &g_runner};

int main(void) {
  uint8_t byte;
  if (mc_mlperf_dut_init(&g_config) != MC_OK) return 1;
  while (mc_platform_read_byte(&byte, UINT32_MAX) == MC_OK) mc_mlperf_dut_receive((char)byte);
  /* the serve loop's idle path: the clock keeps counting across idle periods */
  g_now_ticks += INFERENCE_TICKS;
  (void)mc_mlperf_dut_now_us();
  g_now_ticks += INFERENCE_TICKS;
  printf("idle-us-%llu\n", (unsigned long long)mc_mlperf_dut_now_us());
  return 0;
}
