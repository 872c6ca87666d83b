/* Startup code for bare-metal Cortex-M firmware (ARMv7-M and ARMv8-M Mainline cores).
 *
 * The vector table, the reset handler (enable the FPU when there is one, copy .data from flash,
 * zero .bss, paint the free stack for the high-water measurement, call main) and the fault
 * handler, which prints where the fault happened and halts.
 *
 * Symbols from the project's linker script: __data_load_start, __data_start, __data_end,
 * __bss_start, __bss_end, and the stack region __stack_start .. __stack_end (the stack grows
 * down from __stack_end; the script puts the region at the bottom of RAM, so an overflow runs
 * off the RAM and faults instead of silently overwriting data).
 * Compile definitions: MC_HAS_FPU=1 when the core has an FPU and code uses it.
 */
#include <stddef.h>
#include <stdint.h>

#include "baremetal.h"
#include "microcompiler/platform.h"
#include "microcompiler/report.h"

#ifndef MC_HAS_FPU
#define MC_HAS_FPU 0
#endif

#define STACK_PAINT 0xA5A5A5A5u
#define FAULT_STACK_BYTES 512 /* no suffix: also used in assembly */
#define STRINGIFY(x) #x
#define TO_STRING(x) STRINGIFY(x)

extern uint32_t __data_load_start[];
extern uint32_t __data_start[];
extern uint32_t __data_end[];
extern uint32_t __bss_start[];
extern uint32_t __bss_end[];
extern uint32_t __stack_start[];
extern uint32_t __stack_end[];

int main(void);
void Reset_Handler(void);
void mc_fault_handler(void);
void mc_fault_report(const uint32_t* frame, uint32_t exception);

/* System Control Block registers (ARMv7-M / ARMv8-M). */
#define SCB_REG(offset) (*(volatile uint32_t*)(uintptr_t)(0xE000ED00u + (offset)))
#define SCB_SHCSR SCB_REG(0x24u)
#define SCB_CFSR SCB_REG(0x28u)
#define SCB_HFSR SCB_REG(0x2Cu)
#define SCB_MMFAR SCB_REG(0x34u)
#define SCB_BFAR SCB_REG(0x38u)
#define SCB_CPACR SCB_REG(0x88u)
#define SHCSR_FAULTS_ENABLE ((1u << 16) | (1u << 17) | (1u << 18)) /* MemManage, BusFault, UsageFault */
#define CPACR_CP10_CP11_FULL ((3u << 20) | (3u << 22))

/* ---- Vector table: the 16 system exceptions (no interrupt is ever enabled) ---- */
typedef union {
  void (*handler)(void);
  uint32_t* stack_top;
} mc_vector_t;

__attribute__((section(".vectors"), used)) const mc_vector_t mc_vector_table[16] = {
    {.stack_top = __stack_end}, /* initial main stack pointer */
    {.handler = Reset_Handler},
    {.handler = mc_fault_handler}, /* NMI */
    {.handler = mc_fault_handler}, /* HardFault */
    {.handler = mc_fault_handler}, /* MemManage */
    {.handler = mc_fault_handler}, /* BusFault */
    {.handler = mc_fault_handler}, /* UsageFault */
    {.handler = mc_fault_handler}, /* SecureFault (ARMv8-M) */
    {.handler = 0},
    {.handler = 0},
    {.handler = 0},
    {.handler = mc_fault_handler}, /* SVCall: never used, so unexpected */
    {.handler = mc_fault_handler}, /* DebugMonitor */
    {.handler = 0},
    {.handler = mc_fault_handler}, /* PendSV */
    {.handler = mc_fault_handler}, /* SysTick */
};

/* ---- Reset ---- */
#if MC_HAS_FPU
/* Not inlined, and followed by barriers, so that no floating-point or vector instruction the
 * compiler may emit for the copy loops can run before the coprocessors are switched on. */
__attribute__((noinline)) static void enable_fpu(void) {
  SCB_CPACR |= CPACR_CP10_CP11_FULL;
  __asm volatile("dsb\n isb" ::: "memory");
}
#endif

MC_PLAIN_LOOPS __attribute__((noinline)) static void paint_stack(void) {
  uint32_t* p = __stack_start;
  uint32_t* limit;
  __asm volatile("mov %0, sp" : "=r"(limit));
  limit -= 16; /* stay clear of this function's own frame */
  while (p < limit) *p++ = STACK_PAINT;
}

MC_PLAIN_LOOPS void Reset_Handler(void) {
  uint32_t* src = __data_load_start;
  uint32_t* dst = __data_start;
#if MC_HAS_FPU
  enable_fpu();
#endif
  while (dst < __data_end) *dst++ = *src++;
  for (dst = __bss_start; dst < __bss_end;) *dst++ = 0u;
  paint_stack();
  SCB_SHCSR |= SHCSR_FAULTS_ENABLE; /* report these faults as themselves, not as HardFault */
  /* The last statement, so a tail call: main runs on the whole stack instead of under this
   * function's frame (8 bytes of every firmware's stack high-water). main never returns: every
   * project's main ends in its idle loop. */
  (void)main();
}

size_t mc_stack_size_bytes(void) { return (size_t)((uintptr_t)__stack_end - (uintptr_t)__stack_start); }

size_t mc_stack_used_bytes(void) {
  const uint32_t* p = __stack_start;
  while (p < __stack_end && *p == STACK_PAINT) ++p;
  return (size_t)((uintptr_t)__stack_end - (uintptr_t)p);
}

/* ---- Faults: report and halt ---- */
/* The report needs at most FAULT_STACK_BYTES of stack. It runs below the fault's frame when the
 * stack has that much room left; otherwise (the fault may be a stack overflow) from the top of the
 * stack region: the halted program never returns, and the frame, if readable at all, is then near
 * the bottom of a region of at least 1 KB (MIN_STACK_BYTES), out of the report's reach. So no RAM
 * is reserved for the fault path. */

/* r0 = the stacked exception frame (MSP or PSP, from EXC_RETURN bit 2), r1 = IPSR. */
__attribute__((naked)) void mc_fault_handler(void) {
  __asm volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "mrs r1, ipsr\n"
      "mov r2, sp\n"
      "movw r3, #:lower16:__stack_start+" TO_STRING(FAULT_STACK_BYTES) "\n"
      "movt r3, #:upper16:__stack_start+" TO_STRING(FAULT_STACK_BYTES) "\n"
      "cmp r2, r3\n"
      "bhs 1f\n"
      "movw r2, #:lower16:__stack_end\n"
      "movt r2, #:upper16:__stack_end\n"
      "1:\n"
      "bic r2, r2, #7\n"
      "mov sp, r2\n"
      "b mc_fault_report\n");
}

static void write_hex(const char* label, uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  char text[11];
  int i;
  text[0] = '0';
  text[1] = 'x';
  for (i = 0; i < 8; ++i) text[2 + i] = digits[(value >> (28 - 4 * i)) & 15u];
  text[10] = '\0';
  mc_report_text(" ");
  mc_report_text(label);
  mc_report_text(" ");
  mc_report_text(text);
}

static const char* exception_name(uint32_t exception) {
  switch (exception) {
    case 2: return "NMI";
    case 3: return "HardFault";
    case 4: return "MemManage";
    case 5: return "BusFault";
    case 6: return "UsageFault";
    case 7: return "SecureFault";
    default: return "UnexpectedException";
  }
}

/* Prints "MC-FAULT <name> pc .. lr .. sp .. cfsr .. hfsr .. mmfar .. bfar ..[ stack-overflow]", then
 * ends any report in progress with MC_ERR_INTERNAL, and halts. */
void mc_fault_report(const uint32_t* frame, uint32_t exception) {
  const uintptr_t sp = (uintptr_t)frame;
  uint32_t pc = 0, lr = 0;
  exception &= 0x1FFu;
  /* The frame is only readable if it lies inside the stack (not after a stack overflow). */
  if (sp >= (uintptr_t)__stack_start && sp + 32u <= (uintptr_t)__stack_end) {
    lr = frame[5];
    pc = frame[6];
  }
  mc_report_text("\nMC-FAULT ");
  mc_report_text(exception_name(exception));
  write_hex("pc", pc);
  write_hex("lr", lr);
  write_hex("sp", (uint32_t)sp);
  write_hex("cfsr", SCB_CFSR);
  write_hex("hfsr", SCB_HFSR);
  write_hex("mmfar", SCB_MMFAR);
  write_hex("bfar", SCB_BFAR);
  if (sp < (uintptr_t)__stack_start) mc_report_text(" stack-overflow");
  mc_report_text("\n");
  mc_report_end(MC_ERR_INTERNAL);
  for (;;) {
    __asm volatile("cpsid i\n wfi" ::: "memory");
  }
}
