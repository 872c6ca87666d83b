# `west build -t run` in QEMU, as Zephyr's boards/arm/mps2/board.cmake.
set(SUPPORTED_EMU_PLATFORMS qemu)
set(QEMU_CPU_TYPE_${ARCH} cortex-m7)
set(QEMU_FLAGS_${ARCH}
  -cpu ${QEMU_CPU_TYPE_${ARCH}}
  -machine mps2-an500
  -nographic
  -vga none
  )
board_set_debugger_ifnset(qemu)
