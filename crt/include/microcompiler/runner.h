/* The one run of a model that every project template makes: prepare (place the step's input),
 * the inference alone timed with the platform timer, finish (read the outputs back), then the
 * standalone report (report.h). Templates fill an mc_runner_t with their model's functions and
 * keep only boot and platform code (reading input sets, idling, sleeping between reports).
 *
 *   static const mc_runner_t g_runner = {prepare, infer, finish, 1, g_outputs, g_output_bytes, NULL};
 *   mc_runner_run_steps(&g_runner, 1);
 */
#ifndef MICROCOMPILER_RUNNER_H_
#define MICROCOMPILER_RUNNER_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/platform.h"
#include "microcompiler/report.h"
#include "microcompiler/status.h"

typedef struct {
  mc_status_t (*prepare)(size_t step); /* before the timer: place input set `step` */
  mc_status_t (*infer)(size_t step);   /* timed: the inference */
  mc_status_t (*finish)(void);         /* after the timer: the outputs into their buffers */
  size_t output_count;
  const void* const* outputs;    /* the output buffers the report prints, in order */
  const size_t* output_bytes;    /* their sizes */
  size_t (*stack_used)(void);    /* bytes of stack used so far, reported as stack_bytes; NULL: none */
} mc_runner_t;

/* Inline, so that main() calls the template's prepare/infer/finish directly (the table is a constant):
 * the firmware's stack high-water and code stay what a hand-written main() would cost. */

/* One run of input set `step` and its report (MC-BEGIN .. MC-END); returns its status. */
static inline mc_status_t mc_runner_run(const mc_runner_t* runner, size_t step) {
  uint64_t ticks = 0;
  size_t k;
  mc_status_t status;
  mc_report_begin();
  status = runner->prepare(step);
  if (status == MC_OK) status = mc_platform_timer_start();
  if (status == MC_OK) {
    /* Only the inference is timed. */
    status = runner->infer(step);
    if (mc_platform_timer_stop(&ticks) != MC_OK && status == MC_OK) status = MC_ERR_TIMER;
  }
  if (status == MC_OK) status = runner->finish();
  for (k = 0; k < runner->output_count; ++k) mc_report_tensor((int)k, runner->outputs[k], runner->output_bytes[k]);
  mc_report_value("ticks", ticks);
  mc_report_value("hz", mc_platform_timer_hz());
  if (runner->stack_used != NULL) mc_report_value("stack_bytes", (uint64_t)runner->stack_used());
  mc_report_end(status);
  return status;
}

/* Runs 0 .. steps - 1 in order (the model's state carries over), one report each; after several,
 * MC-STEPS-END. Returns the first failure, or MC_OK. */
static inline mc_status_t mc_runner_run_steps(const mc_runner_t* runner, size_t steps) {
  mc_status_t first_failure = MC_OK;
  size_t step;
  for (step = 0; step < steps; ++step) {
    mc_status_t status = mc_runner_run(runner, step);
    if (first_failure == MC_OK) first_failure = status;
  }
  if (steps > 1) mc_report_text("MC-STEPS-END\n");
  return first_failure;
}

#endif /* MICROCOMPILER_RUNNER_H_ */
