/* The device side of the EEMBC / MLPerf Tiny DUT protocol, over the platform's serial link.
 *
 * The official MLPerf Tiny runner (mlcommons/tiny benchmark/runner) drives a device under test
 * with ASCII commands ended by '%' (at most MC_MLPERF_COMMAND_MAX characters); the device
 * answers every command with lines ended by "\r\n", the last one "m-ready". Commands:
 *   name                  m-name-dut-[NAME]
 *   profile               m-profile-[VERSION] and m-model-[kws01|ic01|vww01|ad01]
 *   db load N             m-[Expecting N bytes]: the next `db` commands fill N bytes
 *   db HEX                append the bytes; the one that completes N answers m-load-done
 *   infer N W             W warm-up runs, m-lap-us-T0, N timed runs, m-lap-us-T1, m-infer-done,
 *                         m-results-[s0,s1,...] (the scores of the last run, on one line)
 *   results               m-results-[...] again
 *   timestamp             m-lap-us-T (microseconds since boot, a 64-bit count)
 *   help                  the list of commands
 * Errors are lines "e-[...]" (and the device still answers "m-ready" and the next command).
 *
 * One implementation for every board: it uses only microcompiler/platform.h, and runs the model
 * through the one runner every template fills (microcompiler/runner.h). No heap: the caller gives
 * every buffer in the configuration.
 */
#ifndef MICROCOMPILER_MLPERF_DUT_H_
#define MICROCOMPILER_MLPERF_DUT_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/runner.h"
#include "microcompiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest command the device accepts (characters before the '%'). */
#define MC_MLPERF_COMMAND_MAX 80

/* How the bytes the host loads become the model's int8 input. */
typedef enum {
  MC_MLPERF_INPUT_INT8 = 0,     /* kws01: int8 features, copied as they are */
  MC_MLPERF_INPUT_UINT8 = 1,    /* ic01, vww01: uint8 pixels, x - 128 (the models' input scale 1, zero point -128) */
  MC_MLPERF_INPUT_FLOAT32 = 2   /* ad01: little-endian float32, quantized with the input's scale and zero point */
} mc_mlperf_input_format_t;

/* What the device reports per inference. */
typedef enum {
  MC_MLPERF_SCORES_OUTPUT = 0,        /* the dequantized output tensor (class scores) */
  MC_MLPERF_SCORES_RECONSTRUCTION = 1 /* one score: the mean squared error between the float input
                                         and the dequantized output (ad01's autoencoder) */
} mc_mlperf_scores_t;

typedef struct {
  const char* device_name;   /* m-name-dut-[device_name] */
  const char* model_version; /* m-model-[...]: kws01, ic01, vww01 or ad01 */
  mc_mlperf_input_format_t input_format;
  mc_mlperf_scores_t scores;
  uint8_t* load_buffer;      /* the `db` bytes; its size is the most `db load` accepts */
  size_t load_capacity;
  int8_t* input;             /* the model's input tensor */
  size_t input_elements;
  float input_scale;
  int32_t input_zero_point;
  const int8_t* output;      /* the model's output tensor */
  size_t output_elements;
  float output_scale;
  int32_t output_zero_point;
  /* The model (runner.h): prepare(0) once the loaded input is in `input` (EEMBC's th_load_tensor),
   * infer(0) for every warm-up and timed run (th_infer), finish() before the scores are read from
   * `output` (th_results). */
  const mc_runner_t* runner;
} mc_mlperf_dut_config_t;

/* Check the configuration and get ready; prints the boot lines ("m-init-done", "m-ready"). */
mc_status_t mc_mlperf_dut_init(const mc_mlperf_dut_config_t* config);

/* Feed one received character to the command parser (runs the command on '%'). */
void mc_mlperf_dut_receive(char c);

/* Read commands from the serial link and answer them, forever. */
void mc_mlperf_dut_serve(void);

/* Microseconds since mc_mlperf_dut_init: the platform timer extended in software to 64 bits
 * (call at least once per timer period; mc_mlperf_dut_serve does, also while idle). */
uint64_t mc_mlperf_dut_now_us(void);

#ifdef __cplusplus
}
#endif

#endif /* MICROCOMPILER_MLPERF_DUT_H_ */
