/* The EEMBC / MLPerf Tiny DUT protocol (see microcompiler/mlperf_dut.h): command parser, input
 * conversion per benchmark, the 64-bit microsecond clock and the score lines. Only the platform
 * API is used, so every board (bare metal or Zephyr) runs this same file. No heap.
 */
#include "microcompiler/mlperf_dut.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "microcompiler/platform.h"

#define FIRMWARE_VERSION "microcompiler MLPerf Tiny DUT 1.0"
#define COMMAND_END '%'
#define MAX_TOKENS 4
#define IDLE_POLL_US 1000000u     /* read timeout while idle: the clock is extended at least this often */
#define DEFAULT_WARMUPS 10u       /* `infer N` without W, as the EEMBC firmware does */
#define MAX_COUNT 1000000000u     /* the most iterations one `infer` accepts */
#define US_PER_SECOND 1000000u
#define SCORE_DIGITS 9            /* significant digits per score: enough to round-trip a float32 */
#define FLOAT_BYTES 4u
#define INT8_MIN_VALUE (-128)
#define INT8_MAX_VALUE 127
#define UINT8_TO_INT8_OFFSET 128

static const mc_mlperf_dut_config_t* g_config;

/* The command being received: MC_MLPERF_COMMAND_MAX characters at most, then a terminator. */
static char g_command[MC_MLPERF_COMMAND_MAX + 1];
static size_t g_command_length;
static int g_command_too_long;

/* The `db` load: how many bytes were announced and how many have arrived. */
static size_t g_load_expected;
static size_t g_load_received;

static int g_have_results;
static double g_reconstruction_error; /* MC_MLPERF_SCORES_RECONSTRUCTION's score of the last run */

/* The clock: the platform timer's elapsed ticks, summed into 64 bits. */
static uint64_t g_clock_ticks;

/* ---- Output ---- */

static void put_bytes(const char* text, size_t length) { (void)mc_platform_write((const uint8_t*)text, length); }

static void put(const char* text) { put_bytes(text, strlen(text)); }

static void put_uint(uint64_t value) {
  char digits[20];
  size_t n = sizeof(digits);
  do {
    digits[--n] = (char)('0' + (int)(value % 10u));
    value /= 10u;
  } while (value != 0u);
  put_bytes(digits + n, sizeof(digits) - n);
}

static void put_line(const char* text) {
  put(text);
  put("\r\n");
}

/* A score as d.dddddddde[+-]XX (SCORE_DIGITS significant digits), or 0.0, nan, inf. */
static void put_score(double value) {
  char text[SCORE_DIGITS + 8];
  size_t n = 0;
  int exponent = 0;
  uint64_t mantissa, limit = 1u;
  int i;
  if (value != value) {
    put("nan");
    return;
  }
  if (value < 0.0) {
    put("-");
    value = -value;
  }
  if (value > 1.0e308) {
    put("inf");
    return;
  }
  if (value == 0.0) {
    put("0.0");
    return;
  }
  for (i = 1; i < SCORE_DIGITS; ++i) limit *= 10u;
  while (value >= 10.0) {
    value /= 10.0;
    ++exponent;
  }
  while (value < 1.0) {
    value *= 10.0;
    --exponent;
  }
  mantissa = (uint64_t)(value * (double)limit + 0.5);
  if (mantissa >= limit * 10u) { /* rounding carried into a new digit: 9.99999999x -> 10.0000000 */
    mantissa /= 10u;
    ++exponent;
  }
  for (i = SCORE_DIGITS; i > 0; --i) {
    text[i] = (char)('0' + (int)(mantissa % 10u));
    mantissa /= 10u;
  }
  text[0] = text[1];
  text[1] = '.';
  n = SCORE_DIGITS + 1;
  text[n++] = 'e';
  text[n++] = exponent < 0 ? '-' : '+';
  if (exponent < 0) exponent = -exponent;
  if (exponent >= 100) text[n++] = (char)('0' + exponent / 100);
  text[n++] = (char)('0' + exponent / 10 % 10);
  text[n++] = (char)('0' + exponent % 10);
  put_bytes(text, n);
}

static void put_error(const char* message, const char* detail) {
  put("e-[");
  put(message);
  put(detail);
  put_line("]");
}

/* ---- Clock ---- */

uint64_t mc_mlperf_dut_now_us(void) {
  uint64_t elapsed = 0, hz = mc_platform_timer_hz();
  /* Fold the ticks since the last call into the 64-bit sum and restart the hardware count, so
   * that it never runs long enough to wrap. */
  if (mc_platform_timer_stop(&elapsed) == MC_OK) g_clock_ticks += elapsed;
  (void)mc_platform_timer_start();
  if (hz == 0u) return 0u;
  return g_clock_ticks / hz * US_PER_SECOND + g_clock_ticks % hz * US_PER_SECOND / hz;
}

static void put_timestamp(void) {
  put("m-lap-us-");
  put_uint(mc_mlperf_dut_now_us());
  put("\r\n");
}

/* ---- Parsing helpers ---- */

/* A decimal count in [0, MAX_COUNT]; returns 0 on anything else. */
static int parse_count(const char* text, uint32_t* value) {
  uint32_t result = 0;
  if (text == NULL || *text == '\0') return 0;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9') return 0;
    result = result * 10u + (uint32_t)(*text - '0');
    if (result > MAX_COUNT) return 0;
  }
  *value = result;
  return 1;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static size_t split(char* command, char* tokens[MAX_TOKENS]) {
  size_t count = 0;
  char* p = command;
  while (*p != '\0') {
    while (*p == ' ') *p++ = '\0';
    if (*p == '\0') break;
    if (count == MAX_TOKENS) return count + 1u; /* too many: the caller rejects it */
    tokens[count++] = p;
    while (*p != '\0' && *p != ' ') ++p;
  }
  return count;
}

/* ---- Commands ---- */

static size_t input_bytes(void) {
  return g_config->input_elements * (g_config->input_format == MC_MLPERF_INPUT_FLOAT32 ? FLOAT_BYTES : 1u);
}

static void command_help(void) {
  put_line(FIRMWARE_VERSION);
  put_line("");
  put_line("help         : Print this information");
  put_line("name         : Print the name of the device");
  put_line("profile      : Print the firmware version and the benchmark (m-model-[...])");
  put_line("timestamp    : Print the time in microseconds (m-lap-us-T)");
  put_line("db load N    : Expect N bytes of input");
  put_line("db HH[HH]*   : Load 8-bit hex byte(s) until N bytes");
  put_line("infer N [W=10]: Load the input, run W warm-up and N timed inferences");
  put_line("results      : Print the scores of the last inference");
}

static void command_db_load(const char* count_text) {
  uint32_t count = 0;
  if (!parse_count(count_text, &count) || count == 0u) {
    put_error("Command 'db load' needs a byte count > 0", "");
    return;
  }
  if (count > g_config->load_capacity) {
    put_error("Command 'db load' asks for more bytes than this benchmark's input buffer holds", "");
    return;
  }
  g_load_expected = count;
  g_load_received = 0;
  put("m-[Expecting ");
  put_uint(count);
  put_line(" bytes]");
}

static void command_db_hex(const char* hex) {
  size_t digits = strlen(hex), i;
  char bad[2] = {0, 0};
  if (g_load_expected == 0u) {
    put_error("No load announced: send 'db load N' first", "");
    return;
  }
  if (digits % 2u != 0u) {
    put_error("Odd number of hex digits", "");
    return;
  }
  for (i = 0; i < digits; ++i) {
    if (hex_value(hex[i]) < 0) {
      bad[0] = hex[i];
      put_error("Invalid hex digit: ", bad);
      return;
    }
  }
  if (g_load_received + digits / 2u > g_load_expected) {
    put_error("More bytes than announced by 'db load'", "");
    return;
  }
  for (i = 0; i < digits; i += 2u) {
    g_config->load_buffer[g_load_received++] = (uint8_t)(hex_value(hex[i]) * 16 + hex_value(hex[i + 1u]));
  }
  if (g_load_received == g_load_expected) put_line("m-load-done");
}

static void command_db(char* tokens[], size_t count) {
  if (count < 2u) {
    put_error("Command 'db' requires a subcommand", "");
  } else if (strcmp(tokens[1], "load") == 0) {
    if (count != 3u) {
      put_error("Command 'db load' requires the number of bytes", "");
    } else {
      command_db_load(tokens[2]);
    }
  } else if (count != 2u) {
    put_error("Command 'db' takes one run of hex digits", "");
  } else {
    command_db_hex(tokens[1]);
  }
}

static int8_t quantize(float value) {
  double scaled = (double)(value / g_config->input_scale);
  double rounded;
  int32_t q;
  if (scaled != scaled) scaled = 0.0;
  if (scaled > 1.0e6) scaled = 1.0e6;
  if (scaled < -1.0e6) scaled = -1.0e6;
  rounded = scaled >= 0.0 ? scaled + 0.5 : scaled - 0.5; /* round half away from zero, as TFLite */
  q = (int32_t)rounded + g_config->input_zero_point;
  if (q < INT8_MIN_VALUE) q = INT8_MIN_VALUE;
  if (q > INT8_MAX_VALUE) q = INT8_MAX_VALUE;
  return (int8_t)q;
}

static float loaded_float(size_t index) {
  float value;
  memcpy(&value, g_config->load_buffer + index * FLOAT_BYTES, sizeof(value)); /* little-endian hosts and targets */
  return value;
}

/* The loaded bytes into the model's input tensor. */
static void load_input(void) {
  const mc_mlperf_dut_config_t* c = g_config;
  size_t i;
  for (i = 0; i < c->input_elements; ++i) {
    switch (c->input_format) {
      case MC_MLPERF_INPUT_INT8:
        c->input[i] = (int8_t)c->load_buffer[i];
        break;
      case MC_MLPERF_INPUT_UINT8:
        c->input[i] = (int8_t)((int)c->load_buffer[i] - UINT8_TO_INT8_OFFSET);
        break;
      default:
        c->input[i] = quantize(loaded_float(i));
        break;
    }
  }
}

static float dequantized_output(size_t index) {
  return (float)((int32_t)g_config->output[index] - g_config->output_zero_point) * g_config->output_scale;
}

/* ad01: the mean squared difference between the float input and the dequantized reconstruction. */
static double reconstruction_error(void) {
  double sum = 0.0;
  size_t i;
  for (i = 0; i < g_config->output_elements; ++i) {
    float difference = loaded_float(i) - dequantized_output(i);
    sum += (double)difference * (double)difference;
  }
  return sum / (double)g_config->output_elements;
}

static void command_results(void) {
  size_t i;
  if (!g_have_results) {
    put_error("No results yet: run 'infer' first", "");
    return;
  }
  put("m-results-[");
  if (g_config->scores == MC_MLPERF_SCORES_RECONSTRUCTION) {
    put_score(g_reconstruction_error);
  } else {
    for (i = 0; i < g_config->output_elements; ++i) {
      if (i != 0u) put(",");
      put_score((double)dequantized_output(i));
    }
  }
  put_line("]");
}

static void put_failure(mc_status_t status) { put_error("Inference failed: ", mc_status_name(status)); }

static int run_model(const mc_runner_t* runner) {
  mc_status_t status = mc_runner_infer(runner, 0);
  (void)mc_mlperf_dut_now_us(); /* extend the clock between runs: no window can wrap the timer */
  if (status != MC_OK) {
    put_failure(status);
    return 0;
  }
  return 1;
}

static void command_infer(char* tokens[], size_t count) {
  uint32_t runs = 1u, warmups = DEFAULT_WARMUPS, i;
  mc_status_t status;
  if (count > 3u) {
    put_error("Command 'infer' takes N and W only", "");
    return;
  }
  if (count >= 2u && (!parse_count(tokens[1], &runs) || runs == 0u)) {
    put_error("Inference iterations must be >0", "");
    return;
  }
  if (count == 3u && !parse_count(tokens[2], &warmups)) {
    put_error("Inference warmup must be >=0", "");
    return;
  }
  if (g_load_expected == 0u || g_load_received != g_load_expected) {
    put_error("No input loaded: send 'db load N' and its bytes first", "");
    return;
  }
  if (g_load_received != input_bytes()) {
    put_error("The loaded input has the wrong size for this model", "");
    return;
  }
  load_input();
  g_have_results = 0;
  status = mc_runner_prepare(g_config->runner, 0); /* the input is in place */
  if (status != MC_OK) {
    put_failure(status);
    return;
  }
  put("m-warmup-start-");
  put_uint(warmups);
  put("\r\n");
  for (i = 0; i < warmups; ++i) {
    if (!run_model(g_config->runner)) return;
  }
  put_line("m-warmup-done");
  put("m-infer-start-");
  put_uint(runs);
  put("\r\n");
  put_timestamp();
  for (i = 0; i < runs; ++i) {
    if (!run_model(g_config->runner)) return;
  }
  put_timestamp();
  status = mc_runner_finish(g_config->runner); /* the outputs in place */
  if (status != MC_OK) {
    put_failure(status);
    return;
  }
  put_line("m-infer-done");
  if (g_config->scores == MC_MLPERF_SCORES_RECONSTRUCTION) g_reconstruction_error = reconstruction_error();
  g_have_results = 1;
  command_results();
}

static void dispatch(char* command) {
  char* tokens[MAX_TOKENS];
  size_t count = split(command, tokens);
  if (count == 0u) {
    /* an empty command (a lone '%', as the runner sends to flush): only the ready line */
  } else if (count > MAX_TOKENS) {
    put_error("Too many arguments", "");
  } else if (strcmp(tokens[0], "name") == 0) {
    put("m-name-dut-[");
    put(g_config->device_name);
    put_line("]");
  } else if (strcmp(tokens[0], "profile") == 0) {
    put_line("m-profile-[" FIRMWARE_VERSION "]");
    put("m-model-[");
    put(g_config->model_version);
    put_line("]");
  } else if (strcmp(tokens[0], "help") == 0) {
    command_help();
  } else if (strcmp(tokens[0], "timestamp") == 0) {
    put_timestamp();
  } else if (strcmp(tokens[0], "db") == 0) {
    command_db(tokens, count);
  } else if (strcmp(tokens[0], "infer") == 0) {
    command_infer(tokens, count);
  } else if (strcmp(tokens[0], "results") == 0) {
    command_results();
  } else {
    put_error("Unknown command: ", tokens[0]);
  }
  put_line("m-ready");
}

/* ---- Entry points ---- */

void mc_mlperf_dut_receive(char c) {
  if (c == COMMAND_END) {
    (void)mc_mlperf_dut_now_us();
    if (g_command_too_long) {
      put_error("Command longer than 80 characters", "");
      put_line("m-ready");
    } else {
      g_command[g_command_length] = '\0';
      dispatch(g_command);
    }
    g_command_length = 0;
    g_command_too_long = 0;
  } else if (c == '\r' || c == '\n' || c == '\0') {
    /* line ends from a terminal: not part of any command */
  } else if (g_command_length < MC_MLPERF_COMMAND_MAX) {
    g_command[g_command_length++] = c;
  } else {
    g_command_too_long = 1; /* keep reading up to the '%', then reject the whole command */
  }
}

mc_status_t mc_mlperf_dut_init(const mc_mlperf_dut_config_t* config) {
  size_t needed;
  if (config == NULL || config->device_name == NULL || config->model_version == NULL ||
      config->load_buffer == NULL || config->input == NULL || config->output == NULL ||
      config->runner == NULL || config->input_elements == 0u || config->output_elements == 0u) {
    return MC_ERR_INVALID_ARGUMENT;
  }
  needed = config->input_elements * (config->input_format == MC_MLPERF_INPUT_FLOAT32 ? FLOAT_BYTES : 1u);
  if (config->load_capacity < needed || !(config->input_scale > 0.0f)) return MC_ERR_INVALID_ARGUMENT;
  if (config->scores == MC_MLPERF_SCORES_RECONSTRUCTION &&
      (config->input_format != MC_MLPERF_INPUT_FLOAT32 || config->output_elements != config->input_elements)) {
    return MC_ERR_INVALID_ARGUMENT; /* the reconstruction is compared with the float input */
  }
  g_config = config;
  g_command_length = 0;
  g_command_too_long = 0;
  g_load_expected = g_load_received = 0;
  g_have_results = 0;
  g_clock_ticks = 0;
  if (mc_platform_timer_start() != MC_OK) return MC_ERR_TIMER;
  put_line("m-timestamp-mode-performance");
  put_line("m-init-done");
  put_line("m-ready");
  return MC_OK;
}

void mc_mlperf_dut_serve(void) {
  for (;;) {
    uint8_t byte;
    if (mc_platform_read_byte(&byte, IDLE_POLL_US) == MC_OK) {
      mc_mlperf_dut_receive((char)byte);
    } else {
      (void)mc_mlperf_dut_now_us();
    }
  }
}
