/* The standalone report: how firmware tells the host what a run produced.
 *
 * Text lines over the platform's write(), parsed by microcompiler/standalone.py:
 *   MC-BEGIN
 *   output<k> <hex bytes, little-endian as stored>
 *   ticks <timer ticks of the inference>
 *   hz <timer ticks per second>
 *   MC-END <status code> <status name>
 */
#ifndef MICROCOMPILER_REPORT_H_
#define MICROCOMPILER_REPORT_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/status.h"

void mc_report_begin(void);
void mc_report_tensor(int index, const void* data, size_t bytes);
void mc_report_value(const char* key, uint64_t value);
void mc_report_end(mc_status_t status);
/* Announce an unrecoverable error ("MC-ABORT <status name>"); platforms call
 * this from mc_platform_abort() before halting. */
void mc_report_abort(mc_status_t status);
/* Write a NUL-terminated string to the link. */
void mc_report_text(const char* text);

#endif /* MICROCOMPILER_REPORT_H_ */
