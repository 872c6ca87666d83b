#include "microcompiler/report.h"

#include "microcompiler/platform.h"

static void write_bytes(const char* s, size_t n) { (void)mc_platform_write((const uint8_t*)s, n); }

MC_PLAIN_LOOPS void mc_report_text(const char* text) {
  size_t n = 0;
  while (text[n] != '\0') ++n;
  write_bytes(text, n);
}

static void write_uint(uint64_t value) {
  char digits[21];
  size_t n = sizeof(digits);
  do {
    digits[--n] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0u);
  write_bytes(digits + n, sizeof(digits) - n);
}

void mc_report_begin(void) { mc_report_text("MC-BEGIN\n"); }

void mc_report_tensor(int index, const void* data, size_t bytes) {
  static const char hex[] = "0123456789abcdef";
  const uint8_t* p = (const uint8_t*)data;
  char chunk[64];
  size_t i, fill = 0;
  mc_report_text("output");
  write_uint((uint64_t)index);
  mc_report_text(" ");
  for (i = 0; i < bytes; ++i) {
    chunk[fill++] = hex[p[i] >> 4];
    chunk[fill++] = hex[p[i] & 15u];
    if (fill == sizeof(chunk)) {
      write_bytes(chunk, fill);
      fill = 0;
    }
  }
  write_bytes(chunk, fill);
  mc_report_text("\n");
}

void mc_report_value(const char* key, uint64_t value) {
  mc_report_text(key);
  mc_report_text(" ");
  write_uint(value);
  mc_report_text("\n");
}

void mc_report_end(mc_status_t status) {
  mc_report_text("MC-END ");
  write_uint((uint64_t)status);
  mc_report_text(" ");
  mc_report_text(mc_status_name(status));
  mc_report_text("\n");
}

void mc_report_abort(mc_status_t status) {
  mc_report_text("MC-ABORT ");
  mc_report_text(mc_status_name(status));
  mc_report_text("\n");
}
