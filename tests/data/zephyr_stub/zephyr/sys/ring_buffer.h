/* The fake Zephyr API is all in kernel.h (see there). */
#include "../kernel.h"
