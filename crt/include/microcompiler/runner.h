/* The one run of a model that every project template makes: prepare (place the step's input),
 * the inference alone timed with the platform timer, finish (read the outputs back), then the
 * standalone report (report.h).
 *
 * A firmware's models are a table of runners, one per model, which every template's main.c gets
 * from one template (project_templates/models/runners.c.j2: each model's inputs, output buffers,
 * prepare, infer and finish); main() keeps only boot and platform code and hands the table, with
 * the platform's stack measure, to mc_runner_run_all:
 *
 *   static const mc_runner_t g_models[MODEL_COUNT] = {{prepare_kws, infer_kws, finish_kws, kws_reset, 1u,
 *                                                     g_kws_outputs, g_kws_output_bytes, NULL}};
 *   mc_runner_run_all(g_models, MODEL_COUNT, MODEL_STEPS, mc_stack_used_bytes);
 *
 * One model (a table of one, unnamed) runs its input sets in order, one report each
 * (mc_runner_run_steps); several models (each named) run once each into one report
 * (mc_runner_run_models). A protocol that drives the model itself (the MLPerf Tiny DUT,
 * mlperf_dut.h) calls the model's prepare, infer and finish at its own times (mc_runner_prepare,
 * mc_runner_infer, mc_runner_finish).
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
  void (*reset)(void);                 /* the state the model keeps across inferences back to its start */
  size_t output_count;
  const void* const* outputs; /* the output buffers the report prints, in order */
  const size_t* output_bytes; /* their sizes */
  const char* name;           /* several models: the model's name, its report keys' prefix; else NULL */
} mc_runner_t;

/* The platform's measure of the stack used so far, reported as stack_bytes (NULL: none reported). */
typedef size_t (*mc_stack_used_t)(void);

/* Inline, so that main() calls the template's prepare/infer/finish directly (the table is a constant):
 * the firmware's stack high-water and code stay what a hand-written main() would cost. */

/* The model's steps one by one, for a caller that times and reports by itself: place input set
 * `step`; run the inference (again and again if the caller wants: the input stays placed); read
 * the outputs back. */
static inline mc_status_t mc_runner_prepare(const mc_runner_t* runner, size_t step) { return runner->prepare(step); }
static inline mc_status_t mc_runner_infer(const mc_runner_t* runner, size_t step) { return runner->infer(step); }
static inline mc_status_t mc_runner_finish(const mc_runner_t* runner) { return runner->finish(); }

/* prepare, the inference alone timed, finish; no report. *ticks gets the inference's timer ticks once the
 * timer stopped (always on MC_OK); a run that failed before may leave it untouched. */
static inline mc_status_t mc_runner_time(const mc_runner_t* runner, size_t step, uint64_t* ticks) {
  mc_status_t status = mc_runner_prepare(runner, step);
  if (status == MC_OK) status = mc_platform_timer_start();
  if (status == MC_OK) {
    /* Only the inference is timed. */
    status = runner->infer(step);
    if (mc_platform_timer_stop(ticks) != MC_OK && status == MC_OK) status = MC_ERR_TIMER;
  }
  if (status == MC_OK) status = mc_runner_finish(runner);
  return status;
}

/* The output buffers into the open report (output<k>, or <name>.output<k> for a named model). */
static inline void mc_runner_report_outputs(const mc_runner_t* runner) {
  size_t k;
  for (k = 0; k < runner->output_count; ++k) {
    if (runner->name != NULL) {
      mc_report_text(runner->name);
      mc_report_text(".");
    }
    mc_report_tensor((int)k, runner->outputs[k], runner->output_bytes[k]);
  }
}

/* One run of input set `step` and its report (MC-BEGIN .. MC-END); returns its status. */
static inline mc_status_t mc_runner_run(const mc_runner_t* runner, size_t step, mc_stack_used_t stack_used) {
  uint64_t ticks = 0u;
  mc_status_t status;
  mc_report_begin();
  status = mc_runner_time(runner, step, &ticks);
  mc_runner_report_outputs(runner);
  mc_report_value("ticks", ticks);
  mc_report_value("hz", mc_platform_timer_hz());
  if (stack_used != NULL) mc_report_value("stack_bytes", (uint64_t)stack_used());
  mc_report_end(status);
  return status;
}

/* Runs 0 .. steps - 1 in order (the model's state carries over), one report each; after several,
 * MC-STEPS-END. Returns the first failure, or MC_OK. */
static inline mc_status_t mc_runner_run_steps(const mc_runner_t* runner, size_t steps, mc_stack_used_t stack_used) {
  mc_status_t first_failure = MC_OK;
  size_t step;
  for (step = 0; step < steps; ++step) {
    mc_status_t status = mc_runner_run(runner, step, stack_used);
    if (first_failure == MC_OK) first_failure = status;
  }
  if (steps > 1) mc_report_text("MC-STEPS-END\n");
  return first_failure;
}

/* A key of a named model's report: <name>.<key> <value>. */
static inline void mc_runner_report_value(const mc_runner_t* runner, const char* key, uint64_t value) {
  mc_report_text(runner->name);
  mc_report_text(".");
  mc_report_value(key, value);
}

/* Several models in one firmware: each of runners[0 .. count - 1] (named) runs once on input set 0,
 * in order, into one report: per model <name>.output<k>, <name>.ticks (0 if it failed) and
 * <name>.status; then hz, and stack_bytes from stack_used (NULL: none). Returns the first failure,
 * or MC_OK. */
static inline mc_status_t mc_runner_run_models(const mc_runner_t* runners, size_t count, mc_stack_used_t stack_used) {
  mc_status_t first_failure = MC_OK;
  size_t m;
  mc_report_begin();
  for (m = 0; m < count; ++m) {
    uint64_t ticks; /* set to 0 here it would tie up an FPU register (and 8 bytes of stack) in the loop */
    mc_status_t status = mc_runner_time(&runners[m], 0, &ticks);
    mc_runner_report_outputs(&runners[m]);
    mc_runner_report_value(&runners[m], "ticks", status == MC_OK ? ticks : 0u);
    mc_runner_report_value(&runners[m], "status", (uint64_t)status);
    if (first_failure == MC_OK) first_failure = status;
  }
  mc_report_value("hz", mc_platform_timer_hz());
  if (stack_used != NULL) mc_report_value("stack_bytes", (uint64_t)stack_used());
  mc_report_end(first_failure);
  return first_failure;
}

/* A firmware's table of models: one runs its input sets 0 .. steps - 1 (mc_runner_run_steps), several
 * run once each into one report (mc_runner_run_models). Returns the first failure, or MC_OK. */
static inline mc_status_t mc_runner_run_all(const mc_runner_t* runners, size_t count, size_t steps,
                                            mc_stack_used_t stack_used) {
  if (count == 1u) return mc_runner_run_steps(runners, steps, stack_used);
  return mc_runner_run_models(runners, count, stack_used);
}

/* Every model's state back to its start (<model>_reset()), so that the next mc_runner_run_all reports
 * what the first did (a firmware that reports again and again). */
static inline void mc_runner_reset_all(const mc_runner_t* runners, size_t count) {
  size_t m;
  for (m = 0; m < count; ++m) runners[m].reset();
}

#endif /* MICROCOMPILER_RUNNER_H_ */
