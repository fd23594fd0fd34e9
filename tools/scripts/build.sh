#!/usr/bin/env bash
# Configures and builds weft into ${WEFT_BUILD_DIR:-build} (Release, with tests and perf tools).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
bash "$root/tools/scripts/install-deps.sh"
# nvcc lives outside PATH in the CUDA toolkit's default location.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${WEFT_CMAKE_ARGS:-}
fi
cmake --build "$build" -j "$(nproc)"
