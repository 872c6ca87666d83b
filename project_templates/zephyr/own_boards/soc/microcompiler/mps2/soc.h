/* The SoC header Zephyr's Cortex-M code includes: CMSIS core defaults (interrupt numbers from
 * CONFIG_NUM_IRQS, the core from CONFIG_CPU_CORTEX_M*), as Zephyr's soc/arm/mps2/soc.h. */
#ifndef MC_MPS2_SOC_H_
#define MC_MPS2_SOC_H_

#include <cmsis_core_m_defaults.h>

#endif /* MC_MPS2_SOC_H_ */
