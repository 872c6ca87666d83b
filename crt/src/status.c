#include "microcompiler/status.h"

const char* mc_status_name(mc_status_t status) {
  static const char* const names[MC_STATUS_COUNT] = {
      "MC_OK",           "MC_ERR_INVALID_ARGUMENT", "MC_ERR_NOT_FOUND",
      "MC_ERR_OUT_OF_MEMORY", "MC_ERR_BAD_GRAPH",   "MC_ERR_UNSUPPORTED",
      "MC_ERR_TIMER",    "MC_ERR_IO",               "MC_ERR_PROTOCOL",
      "MC_ERR_INTERNAL"};
  if (status < 0 || status >= MC_STATUS_COUNT) return "MC_ERR_UNKNOWN";
  return names[status];
}
