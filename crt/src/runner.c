#include "microcompiler/runner.h"

#include <stdint.h>

#include "microcompiler/platform.h"
#include "microcompiler/report.h"

mc_status_t mc_runner_run(const mc_runner_t* runner, size_t step) {
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

mc_status_t mc_runner_run_steps(const mc_runner_t* runner, size_t steps) {
  mc_status_t first_failure = MC_OK;
  size_t step;
  for (step = 0; step < steps; ++step) {
    mc_status_t status = mc_runner_run(runner, step);
    if (first_failure == MC_OK) first_failure = status;
  }
  if (steps > 1) mc_report_text("MC-STEPS-END\n");
  return first_failure;
}
