#!/usr/bin/env bash
# Install everything microcompiler needs on a fresh Debian (12+) machine:
# the C toolchains, QEMU, and microcompiler itself with its test and Zephyr extras in ./.venv; with
# ../shared/zephyr beside the checkout, also the Zephyr 3.7.1 workspace the tests build with.
# MC_TFLM_BENCH_BOARDS="mps2_an386 ..." (optional): also build ../shared/tflm's TFLM + CMSIS-NN library
# for those boards (6-26 minutes each), which scripts/benchmarks.py and the long side-by-side test use.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PACKAGES="${MC_TFLM_BENCH_BOARDS:+libstdc++-arm-none-eabi-newlib xz-utils make }gcc clang libclang-rt-14-dev gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm cmake ninja-build device-tree-compiler ccache python3-venv python3-pip chromium"
missing=""
for p in $PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing Debian packages:$missing" >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
echo "setup: installing microcompiler into .venv" >&2
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q ".[test,validate,ray,zephyr]"

# The Zephyr workspace (docs/zephyr.md): unpacked once, into $HOME/.cache/zephyr-3.7.1; the tests
# (tests/conftest.py) take ZEPHYR_BASE and the toolchain variables from the same script.
# The workspace is recorded (in ~/.config/microcompiler/zephyr-base), so that `microcompiler build`
# finds it without ZEPHYR_BASE exported; rerunning records the same path again.
if [ -f ../shared/zephyr/setup-workspace.sh ]; then
  echo "setup: preparing the Zephyr workspace from ../shared/zephyr" >&2
  exports=$(PATH="$PWD/.venv/bin:$PATH" bash ../shared/zephyr/setup-workspace.sh)
  zephyr_base=$(printf '%s\n' "$exports" | sed -n 's/.*ZEPHYR_BASE=\([^ ]*\).*/\1/p' | tail -n 1)
  if [ -n "$zephyr_base" ]; then
    .venv/bin/python -m microcompiler.zephyr.workspace --record "$zephyr_base" >&2
  fi
fi

# TFLM + CMSIS-NN side by side (docs/benchmarks.md): tflm-bench builds its library on its first call per
# board, into ~/.cache/tflm-bench/<board>-cmsis-nn; one board at a time (each build takes every core).
for board in ${MC_TFLM_BENCH_BOARDS:-}; do
  echo "setup: building TFLM + CMSIS-NN for $board (../shared/tflm/tflm-bench; minutes)" >&2
  .venv/bin/python ../shared/tflm/tflm-bench ../shared/models/tflm/hello_world_int8.tflite --board "$board" --json >/dev/null
done
