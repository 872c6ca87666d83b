/* The platform API on POSIX hosts (Linux, macOS): stdio for the link, clock_gettime for time. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "microcompiler/platform.h"

static struct timespec g_timer_start;

mc_status_t mc_platform_init(void) { return MC_OK; }

void mc_platform_abort(mc_status_t status) {
  fprintf(stderr, "microcompiler: abort: %s\n", mc_status_name(status));
  exit(70);
}

mc_status_t mc_platform_write(const uint8_t* data, size_t len) {
  while (len > 0) {
    ssize_t n = write(STDOUT_FILENO, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return MC_ERR_IO;
    }
    data += n;
    len -= (size_t)n;
  }
  return MC_OK;
}

mc_status_t mc_platform_read_byte(uint8_t* byte, uint32_t timeout_us) {
  struct pollfd pfd;
  int timeout_ms = timeout_us == UINT32_MAX ? -1 : (int)((timeout_us + 999u) / 1000u);
  pfd.fd = STDIN_FILENO;
  pfd.events = POLLIN;
  for (;;) {
    int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return MC_ERR_IO;
    break;
  }
  for (;;) {
    ssize_t n = read(STDIN_FILENO, byte, 1);
    if (n == 1) return MC_OK;
    if (n < 0 && errno == EINTR) continue;
    return MC_ERR_IO; /* end of file or error */
  }
}

mc_status_t mc_platform_timer_start(void) {
  return clock_gettime(CLOCK_MONOTONIC, &g_timer_start) == 0 ? MC_OK : MC_ERR_TIMER;
}

mc_status_t mc_platform_timer_stop(uint64_t* elapsed_ticks) {
  struct timespec now;
  if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) return MC_ERR_TIMER;
  *elapsed_ticks = (uint64_t)(now.tv_sec - g_timer_start.tv_sec) * 1000000000u +
                   (uint64_t)(now.tv_nsec - g_timer_start.tv_nsec);
  return MC_OK;
}

uint32_t mc_platform_timer_hz(void) { return 1000000000u; }

mc_status_t mc_platform_random(uint8_t* buf, size_t len) {
  FILE* f = fopen("/dev/urandom", "rb");
  size_t got;
  if (f == NULL) return MC_ERR_IO;
  got = fread(buf, 1, len, f);
  fclose(f);
  return got == len ? MC_OK : MC_ERR_IO;
}
