#!/usr/bin/env bash
# Configures and builds weft into ${WEFT_BUILD_DIR:-build} (RelWithDebInfo, with tests and perf
# tools; WEFT_BUILD_TARGETS: only those). WEFT_CMAKE_ARGS adds CMake arguments (e.g.
# -DWEFT_SANITIZE=address,undefined); they are applied to an existing build folder too. With CI
# set, warnings are errors (WEFT_WERROR).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
bash "$root/tools/scripts/install-deps.sh"
# nvcc lives outside PATH in the CUDA toolkit's default location.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
args=()
[ -n "${CI:-}" ] && args+=(-DWEFT_WERROR=ON)
read -r -a extra <<<"${WEFT_CMAKE_ARGS:-}"
args+=(${extra[@]+"${extra[@]}"})
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${args[@]+"${args[@]}"}
elif ((${#args[@]})); then
  cmake "$build" "${args[@]}"
fi
# WEFT_BUILD_TARGETS (space-separated): only those targets and what they link, instead of all.
read -r -a targets <<<"${WEFT_BUILD_TARGETS:-}"
cmake --build "$build" -j "$(nproc)" ${targets[@]+--target "${targets[@]}"}
