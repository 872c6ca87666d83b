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

/* One run of input set `step` and its report (MC-BEGIN .. MC-END); returns its status. */
mc_status_t mc_runner_run(const mc_runner_t* runner, size_t step);

/* Runs 0 .. steps - 1 in order (the model's state carries over), one report each; after several,
 * MC-STEPS-END. Returns the first failure, or MC_OK. */
mc_status_t mc_runner_run_steps(const mc_runner_t* runner, size_t steps);

#endif /* MICROCOMPILER_RUNNER_H_ */
