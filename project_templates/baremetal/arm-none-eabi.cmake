# CMake toolchain file: the GNU Arm Embedded toolchain (arm-none-eabi-gcc), bare metal.
# Override the prefix with -DMC_TOOLCHAIN_PREFIX=/opt/gcc-arm/bin/arm-none-eabi- if it is not on PATH.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(MC_TOOLCHAIN_PREFIX "arm-none-eabi-" CACHE STRING "prefix of the cross compiler's tools")
set(CMAKE_C_COMPILER "${MC_TOOLCHAIN_PREFIX}gcc")
set(CMAKE_ASM_COMPILER "${MC_TOOLCHAIN_PREFIX}gcc")
set(CMAKE_OBJCOPY "${MC_TOOLCHAIN_PREFIX}objcopy" CACHE FILEPATH "objcopy")
set(CMAKE_SIZE "${MC_TOOLCHAIN_PREFIX}size" CACHE FILEPATH "size")

# A firmware cannot run on the build machine: test the compiler by building a library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
