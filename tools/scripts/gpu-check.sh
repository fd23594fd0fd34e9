#!/usr/bin/env bash
# Device memory and the CUDA codecs on a lent GPU machine, in one prepared call: collectives on
# cudaMalloc buffers in stream order against the reference, PyTorch's DDP with backend "nccl" on
# weft's libnccl.so.2, the CUDA codecs' bytes against the CPU codecs', and the codecs' speed
# against the device-to-device copy.
#
# With the device tool, from this repository (the command runs in the root of a copy of it):
#     tools/scripts/gpu-check.sh --fetch-deps      # once, here: .debs the device may lack
#     run(command="bash tools/scripts/gpu-check.sh", carry=[".gpu-deps"], timeout_s=540)
# Steps, each bounded by a timeout, all output under $OUT (else ./gpu-check-out):
#   1. nvidia-smi -L, the driver's CUDA version and nvcc's; without a usable GPU, or with a
#      toolkit newer than the driver runs, it stops here (exit 2) before building anything,
#      unless WEFT_GPU_CHECK_NO_GPU=continue (then the GPU programs report themselves skipped).
#   2. dependencies (GoogleTest, Google Benchmark, hwloc, pkg-config): if any is missing, the
#      packages carried in .gpu-deps/ (made by --fetch-deps) are unpacked into a private prefix
#      (never into /; WEFT_GPU_CHECK_FORCE_CARRIED=1 uses them even when nothing is missing);
#      else, if a registry's name resolves (5 s), tools/scripts/install-deps.sh; else it stops
#      (exit 3) naming what is missing.
#   3. configure ${WEFT_GPU_BUILD_DIR:-/tmp/weft-gpu-check} (Release, -DWEFT_WITH_CUDA=ON,
#      WEFT_TEST_AREAS=compression;stream_order;reduce_cuda;memalloc_cuda;host_path_cuda) and
#      build libnccl.so.2, compression_cuda_test, reduce_cuda_test, memalloc_cuda_test,
#      host_path_cuda_test, stream_order_cuda_test, bench_compression_cuda, bench_reduce_cuda
#      and bench_compression with -j$(nproc).
#   4. compression_cuda_test: the CUDA codecs give the CPU codecs' bytes (test.log);
#      reduce_cuda_test: the CUDA reduction kernels give the CPU kernels' results for every
#      type and operator, and read a device PreMulSum scalar in stream order (reduce.log);
#      memalloc_cuda_test: ncclMemAlloc gives cuMem device memory whose handle exports as a
#      POSIX fd, and a 2-rank all-reduce in one process runs on it in stream order (memalloc.log);
#      host_path_cuda_test: host-memory collectives create no CUDA context (host_path.log).
#   4b. stream_order_cuda_test: every collective on cudaMalloc buffers in stream order, 2 and then
#      4 rank processes sharing the GPU, against the reference, WEFT_TIMEOUT=30
#      (stream_order_2ranks.log, stream_order_4ranks.log).
#   4c. PyTorch, when python3 imports a torch built with CUDA: the nccl* symbols its libraries
#      import, each checked against libnccl.so.2's exports; then tests/gpu/ddp_check.py, 2
#      processes on the one GPU with backend "nccl" and weft's libnccl.so.2 in LD_PRELOAD (four
#      collectives checked, 20 DDP steps), and the same training with backend "gloo" on the CPU:
#      the losses must agree (pytorch.log). Without such a torch the step says so and is skipped.
#   4d. the 2-rank grid twice more, on ncclMemAlloc and on cudaMalloc buffers, with every
#      collective the direct path has on it (WEFT_DIRECT_MIN_BYTES=1), and its ring of sends
#      and receives direct too: the ranks map each other's
#      buffers (or weft's own, for cudaMalloc's) through CUDA IPC, or stage where that is
#      refused; the summary says which path ran (stream_order_direct_*.log). After PyTorch,
#      whose DDP buckets take the same path, since the deadline cuts the last steps.
#   4e. the 2-rank grid across two fake hosts (WEFT_HOSTNAME per rank, TCP between them) with
#      slices of 4 KiB a rank: its large calls staged slice by slice, an all-gather's and a
#      reduce-scatter's blocks moved in 2-D copies (stream_order_sliced.log); the summary says
#      whether slices ran.
#   4f. the 2-rank grid on cudaMalloc buffers once more, with own device buffers of 64 KiB
#      (WEFT_OWN_DEVICE_BUFFER_BYTES): its 8-byte all-gathers and reduce-scatters are larger and go
#      direct in two strided pieces, through the own buffers with 2-D copies device to device
#      (stream_order_pieces.log); the summary says whether pieces ran.
#   5. bench_compression_cuda: GB/s of float32 input for each CUDA encode/decode on 64 MiB
#      beside cudaMemcpyAsync device to device, 3 repetitions (bench_cuda.txt / .json).
#   5b. bench_reduce_cuda: the CUDA reduction kernels on 64 MiB, memory traffic beside the same
#      copy (bench_reduce_cuda.txt / .json).
#   6. bench_compression: the CPU codecs on one core, for comparison (bench_cpu.txt / .json).
# summary.txt holds each step's status, the test summary and both tables (median of the
# repetitions, % of the copy measured in the same run); setup.log the dependency, configure and
# build output. Exit status: 0 all passed, 1 a step failed, 2 no usable GPU, 3 missing
# dependencies. Every step has its own timeout, and none runs past WEFT_GPU_CHECK_DEADLINE
# (default 480 s from the start), so the summary is written well inside a 540 s timeout_s.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
debs="$root/.gpu-deps"
deb_packages=(libgtest-dev libbenchmark-dev libbenchmark1debian libhwloc-dev libhwloc15 libudev1 pkgconf-bin libpkgconf3)

if [ "${1:-}" = "--fetch-deps" ]; then
  # Here, on the development machine: the Debian packages the device machine may lack, into
  # .gpu-deps/ (ignored by .gitignore, so it travels only when `carry` names it).
  mkdir -p "$debs"
  (cd "$debs" && timeout 300 apt-get download "${deb_packages[@]}") || { echo "gpu-check: apt-get download failed" >&2; exit 1; }
  ls -l "$debs"
  exit 0
fi

out=${OUT:-$PWD/gpu-check-out}
build=${WEFT_GPU_BUILD_DIR:-/tmp/weft-gpu-check}
prefix=${WEFT_GPU_DEPS_PREFIX:-/tmp/weft-gpu-deps}
# Every step ends by this many seconds after the start; keep it below the device tool's timeout_s.
deadline=${WEFT_GPU_CHECK_DEADLINE:-480}
mkdir -p "$out"
summary="$out/summary.txt"
setup="$out/setup.log"
: >"$summary"
: >"$setup"
status=0

say() { echo "gpu-check: $*" | tee -a "$summary"; }
# step NAME LOG SECONDS CMD...: runs CMD with a timeout (SECONDS, cut to what is left before the
# deadline, so that the summary is always written), appending to LOG; records the result.
step() {
  local name=$1 log=$2 seconds=$3
  shift 3
  local start=$SECONDS rc left=$((deadline - SECONDS))
  if [ $left -lt 5 ]; then
    say "$name: NOT RUN, the ${deadline} s deadline (WEFT_GPU_CHECK_DEADLINE) has passed"
    status=1
    return 124
  fi
  [ $left -lt "$seconds" ] && seconds=$left
  echo "== $name: $*" >>"$log"
  timeout --kill-after=10 "$seconds" "$@" >>"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    say "$name: ok ($((SECONDS - start)) s)"
  else
    if [ $rc -eq 124 ]; then
      say "$name: TIMED OUT after $seconds s (log: $(basename "$log"))"
    else
      say "$name: FAILED, exit $rc ($((SECONDS - start)) s; log: $(basename "$log"))"
    fi
    status=1
  fi
  return $rc
}

say "repository $root, build $build, output $out, $(nproc) cores, $(date -u +%FT%TZ)"
if commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
  git -C "$root" diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
  say "commit $commit"
fi

# ---- 1. the GPU ----
gpu_why=""
if ! command -v nvidia-smi >/dev/null; then
  gpu_why="nvidia-smi is not installed"
elif ! gpus=$(timeout 30 nvidia-smi -L 2>&1); then
  gpu_why="nvidia-smi -L failed: $(echo "$gpus" | head -n 3 | tr '\n' ' ')"
elif ! echo "$gpus" | grep -q '^GPU '; then
  gpu_why="nvidia-smi lists no GPU"
else
  echo "$gpus" | tee -a "$summary"
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
# A toolkit of a newer major version than the driver's builds programs that find no device (minor
# versions are compatible): say so before building.
driver_cuda=$(timeout 30 nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -n 1 | awk '{print $3}')
toolkit_cuda=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | awk '{print $2}')
say "CUDA toolkit ${toolkit_cuda:-none (nvcc not found)}; driver supports CUDA ${driver_cuda:-unknown}"
if [ -z "$gpu_why" ] && [ -n "$driver_cuda" ] && [ -n "$toolkit_cuda" ] &&
  [ "${toolkit_cuda%%.*}" -gt "${driver_cuda%%.*}" ]; then
  gpu_why="nvcc $toolkit_cuda is newer than the CUDA $driver_cuda the driver runs"
fi
if [ -n "$gpu_why" ]; then
  if [ "${WEFT_GPU_CHECK_NO_GPU:-}" != continue ]; then
    say "no usable NVIDIA GPU: $gpu_why; stopping before the build (WEFT_GPU_CHECK_NO_GPU=continue builds and runs anyway)"
    exit 2
  fi
  say "no usable NVIDIA GPU: $gpu_why; continuing (WEFT_GPU_CHECK_NO_GPU=continue): the GPU programs will report skipped"
fi

# ---- 2. dependencies ----

missing_deps() {
  local m=() d found
  for tool in cmake g++ nvcc; do command -v "$tool" >/dev/null || m+=("$tool"); done
  if command -v "${PKG_CONFIG:-pkg-config}" >/dev/null; then
    "${PKG_CONFIG:-pkg-config}" --exists hwloc || m+=(hwloc)
  else
    m+=(pkg-config)
  fi
  for header in gtest/gtest.h benchmark/benchmark.h; do
    found=""
    for d in /usr/include /usr/local/include "$prefix/usr/include"; do [ -f "$d/$header" ] && found=1; done
    [ -n "$found" ] || m+=("${header%%/*}")
  done
  echo "${m[*]}"
}

use_carried_debs() {
  local deb pkg member
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for deb in "$debs"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      pkg=$(dpkg-deb -f "$deb" Package)
      if [ "${WEFT_GPU_CHECK_FORCE_CARRIED:-}" != 1 ] &&
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        echo "carried $pkg: already installed, not unpacked" >>"$setup"
        continue
      fi
      dpkg-deb -x "$deb" "$prefix" || return 1
    else  # no dpkg: a .deb is an ar archive holding data.tar.*
      member=$(ar t "$deb" | grep '^data\.tar') && (cd "$prefix" && ar x "$deb" "$member") &&
        tar -xf "$prefix/$member" -C "$prefix" && rm -f "$prefix/$member" || return 1
    fi
    echo "carried $(basename "$deb"): unpacked into $prefix" >>"$setup"
  done
  local lib="$prefix/usr/lib/x86_64-linux-gnu"
  # The .pc files name prefix=/usr; point them at the private prefix.
  for pc in "$lib"/pkgconfig/*.pc; do [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|" "$pc"; done
  export PKG_CONFIG_PATH="$lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if ! command -v pkg-config >/dev/null && [ -x "$prefix/usr/bin/pkgconf" ]; then export PKG_CONFIG="$prefix/usr/bin/pkgconf"; fi
}

missing=$(missing_deps)
if { [ -n "$missing" ] || [ "${WEFT_GPU_CHECK_FORCE_CARRIED:-}" = 1 ]; } && compgen -G "$debs/*.deb" >/dev/null; then
  say "missing: ${missing:-nothing (WEFT_GPU_CHECK_FORCE_CARRIED=1)}; unpacking the carried packages of .gpu-deps/ into $prefix"
  use_carried_debs || say "unpacking the carried packages failed (setup.log)"
  missing=$(missing_deps)
fi
if [ -n "$missing" ] && command -v apt-get >/dev/null && timeout 5 getent hosts deb.debian.org >/dev/null 2>&1; then
  say "missing: $missing; trying apt-get"
  if step "apt-get update" "$setup" 60 apt-get update -qq; then
    step "install-deps.sh" "$setup" 180 bash "$root/tools/scripts/install-deps.sh"
  fi
  missing=$(missing_deps)
fi
if [ -n "$missing" ]; then
  say "missing dependencies: $missing, and no package registry reachable. Run tools/scripts/gpu-check.sh --fetch-deps on a machine with apt, then name .gpu-deps in the device tool's carry. (nvcc, cmake and g++ cannot be carried this way.)"
  exit 3
fi
status=0  # a failed apt-get that was not needed after all does not count

# ---- 3. configure and build ----
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake_args=(-S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DWEFT_WITH_CUDA=ON
            "-DWEFT_TEST_AREAS=compression;stream_order;reduce_cuda;memalloc_cuda;host_path_cuda")
[ -n "${PKG_CONFIG:-}" ] && cmake_args+=(-DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG")
# shellcheck disable=SC2206
cmake_args+=(${WEFT_GPU_CHECK_CMAKE_ARGS:-})
step configure "$setup" 120 cmake "${cmake_args[@]}" || exit 1
step build "$setup" 300 cmake --build "$build" -j "${WEFT_GPU_CHECK_JOBS:-$(nproc)}" \
  --target nccl compression_cuda_test reduce_cuda_test memalloc_cuda_test host_path_cuda_test \
  stream_order_cuda_test bench_compression_cuda bench_reduce_cuda bench_compression || exit 1

# ---- 4. CPU and CUDA bytes, ncclMemAlloc ----
# gpu_test NAME LOG SECONDS SKIPPED: runs tests/NAME; GoogleTest's counts, each failed test and
# the distinct reasons for skips go to the summary. With a GPU listed, a skipped test matching
# SKIPPED (an extended grep pattern) means the program could not use the GPU: that fails the check.
gpu_test() {
  step "$1" "$2" "$3" "$build/tests/$1" --gtest_color=no
  sed -n '/^\[==========\] .* ran\./,$p' "$2" | grep -E '^\[(==========|  PASSED  |  SKIPPED \] [0-9]|  FAILED  )' |
    head -n 30 >>"$summary"
  grep -A 1 ': Skipped$' "$2" | grep -vE ': Skipped$|^--$' | sort | uniq -c | head -n 3 | sed "s/^/$1 skipped: /" >>"$summary"
  if [ -z "$gpu_why" ] && grep -qE "^\[  SKIPPED \] ($4)" "$2"; then
    say "$1: FAILED: tests skipped although nvidia-smi lists a GPU"
    status=1
  fi
}
gpu_test compression_cuda_test "$out/test.log" 240 '[0-9]'
# reduce_cuda_test's one test for machines without a device skips by design where there is one;
# memalloc_cuda_test's export test may skip where a sandbox refuses to export handles (it says so).
gpu_test reduce_cuda_test "$out/reduce.log" 120 'EveryType/ReduceCuda'
gpu_test memalloc_cuda_test "$out/memalloc.log" 60 'MemAllocCuda\.(Gives|Collectives|WeftMem)'
gpu_test host_path_cuda_test "$out/host_path.log" 60 'HostPathCuda'

# ---- 4b. device-memory collectives in stream order ----
# One run per rank count, each with its own timeout and log, and weft's time-out well inside it,
# so that a hang ends as weft's error message rather than as the step's timeout.
for ranks in 2 4; do
  case $ranks in 2) filter='*/0' ;; 4) filter='*/1' ;; esac
  order_log="$out/stream_order_${ranks}ranks.log"
  step "stream_order_cuda_test, $ranks ranks" "$order_log" 75 env WEFT_TIMEOUT=30 NCCL_SOCKET_IFNAME=lo \
    "$build/tests/stream_order_cuda_test" --gtest_color=no --gtest_filter="$filter"
  sed -n '/^\[==========\] .* ran\./,$p' "$order_log" | head -n 12 >>"$summary"
  if [ -z "$gpu_why" ] && grep -q '^\[  SKIPPED \] [0-9]' "$order_log"; then
    say "stream_order_cuda_test, $ranks ranks: FAILED: tests skipped although nvidia-smi lists a GPU"
    status=1
  fi
done

# ---- 4c. PyTorch's NCCL backend on weft ----
torch_log="$out/pytorch.log"
libnccl="$build/libnccl.so.2"
torch_lib=$(timeout 60 python3 -c 'import os, torch; assert torch.cuda.is_available(), "no CUDA device for torch"; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>>"$torch_log")
if [ -z "$torch_lib" ]; then
  say "PyTorch: skipped: python3 has no torch that sees the GPU ($(tail -n 1 "$torch_log" 2>/dev/null))"
elif [ ! -f "$libnccl" ]; then
  say "PyTorch: FAILED: $libnccl was not built"
  status=1
else
  imported=$(for so in "$torch_lib"/*.so*; do nm -D --undefined-only "$so" 2>/dev/null; done | awk '$NF ~ /^nccl/ {print $NF}' | sed 's/@.*//' | sort -u)
  exported=$(nm -D --defined-only "$libnccl" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
  if [ -z "$imported" ]; then
    say "PyTorch: its libraries import no nccl* symbol (NCCL linked in statically?): LD_PRELOAD cannot replace it"
    status=1
  else
    missing_symbols=$(comm -23 <(echo "$imported") <(echo "$exported"))
    say "PyTorch imports $(echo "$imported" | wc -l) nccl* symbols; weft lacks ${missing_symbols:-none of them}"
    echo "$imported" >"$out/torch_nccl_symbols.txt"
    [ -n "$missing_symbols" ] && status=1
  fi
  # What torch will run on with weft preloaded (weft's libnccl.so.2 brings its own libcudart).
  { echo "== torch and weft's libraries"; python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)';
    ldd "$libnccl"; } >>"$torch_log" 2>&1
  step "PyTorch DDP, backend nccl on weft" "$torch_log" 150 sh -c "WEFT_TIMEOUT=60 LD_PRELOAD='$libnccl' python3 \
    '$root/tests/gpu/ddp_check.py' --backend nccl --device cuda --expect-nccl '$libnccl' --timeout 120 >'$out/ddp_nccl.json'"
  step "PyTorch DDP, backend gloo on the CPU (reference)" "$torch_log" 90 \
    sh -c "python3 '$root/tests/gpu/ddp_check.py' --backend gloo --device cpu --timeout 80 >'$out/ddp_gloo.json'"
  if [ -s "$out/ddp_nccl.json" ] && [ -s "$out/ddp_gloo.json" ]; then
    step "PyTorch DDP losses, weft against the reference" "$torch_log" 30 \
      python3 "$root/tests/gpu/ddp_check.py" --compare "$out/ddp_nccl.json" "$out/ddp_gloo.json"
    grep -A 1 '== PyTorch DDP losses' "$torch_log" | tail -n 1 >>"$summary"
  fi
fi

# ---- 4d. the direct path on device buffers ----
# The grid again on 2 ranks, every collective large enough for the direct path, so that the rank processes sharing the GPU map each other's buffers (CUDA
# IPC) and reduce with kernels: on ncclMemAlloc's (cuMem) buffers, mapped themselves, and on
# cudaMalloc's, copied through weft's own mapped buffers. Where a sandbox refuses IPC they stage
# instead. The log says which path ran.
for alloc in ncclMemAlloc cudaMalloc; do
  direct_log="$out/stream_order_direct_$alloc.log"
  step "stream_order_cuda_test, 2 ranks, direct collectives on $alloc buffers" "$direct_log" 75 env WEFT_TIMEOUT=30 \
    NCCL_SOCKET_IFNAME=lo WEFT_TEST_DEVICE_ALLOC=$alloc WEFT_DIRECT_MIN_BYTES=1 WEFT_ONE_SHOT_MAX_BYTES=0 \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL "$build/tests/stream_order_cuda_test" --gtest_color=no --gtest_filter='*/0'
  if grep -q '^\[  SKIPPED \] [0-9]' "$direct_log"; then
    say "device collectives' path on $alloc buffers: not run (the test skipped)"
  elif grep -q "goes direct: peers' device buffers mapped" "$direct_log"; then
    say "device collectives' path on $alloc buffers: direct"
  elif grep -q "cannot map the peers' device buffers" "$direct_log"; then
    say "device collectives' path on $alloc buffers: staged, CUDA IPC refused: $(grep -o "cannot map the peers' device buffers.*" "$direct_log" | head -n 1)"
  else
    say "device collectives' path on $alloc buffers: staged ($(grep -o 'no device buffers of its own.*' "$direct_log" | head -n 1); NCCL_DEBUG_SUBSYS=ALLOC says more)"
  fi
  if grep -q "device sends and receives go direct" "$direct_log"; then
    say "device sends and receives on $alloc buffers: direct"
  elif ! grep -q '^\[  SKIPPED \] [0-9]' "$direct_log"; then
    say "device sends and receives on $alloc buffers: staged"
  fi
done

# ---- 4e. pipelined staging between (fake) hosts ----
sliced_log="$out/stream_order_sliced.log"
step "stream_order_cuda_test, 2 ranks on two fake hosts, staged slice by slice" "$sliced_log" 75 env WEFT_TIMEOUT=30 \
  NCCL_SOCKET_IFNAME=lo WEFT_TEST_FAKE_HOSTS=1 WEFT_STAGING_SLICE_BYTES=4096 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL \
  "$build/tests/stream_order_cuda_test" --gtest_color=no --gtest_filter='*/0'
# 4099 elements of 4 bytes a block: 5 slices of at most 820.
if grep -q '^\[  SKIPPED \] [0-9]' "$sliced_log"; then
  say "pipelined staging between hosts: not run (the test skipped)"
elif grep -qE 'allgather: 820 x (float|int32|uint32)' "$sliced_log" && grep -qE 'reducescatter: 820 x' "$sliced_log"; then
  say "pipelined staging between hosts: all-gathers and reduce-scatters ran as slices of 820 elements"
else
  say "pipelined staging between hosts: FAILED: no slices in the log"
  status=1
fi

# ---- 4f. calls larger than the own device buffers, in pieces ----
pieces_log="$out/stream_order_pieces.log"
step "stream_order_cuda_test, 2 ranks, cudaMalloc buffers, direct in pieces of 64 KiB" "$pieces_log" 75 env \
  WEFT_TIMEOUT=30 NCCL_SOCKET_IFNAME=lo WEFT_TEST_DEVICE_ALLOC=cudaMalloc WEFT_DIRECT_MIN_BYTES=1 \
  WEFT_ONE_SHOT_MAX_BYTES=0 WEFT_OWN_DEVICE_BUFFER_BYTES=65536 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL \
  "$build/tests/stream_order_cuda_test" --gtest_color=no --gtest_filter='*/0'
# 4099 elements of 8 bytes a block, 2 ranks: 65584 bytes, two pieces (2560 elements, whole 4 KiB, and 1539).
if grep -q '^\[  SKIPPED \] [0-9]' "$pieces_log"; then
  say "pieces through the own device buffers: not run (the test skipped)"
elif grep -qE 'allgather: 2560 x .*algorithm direct' "$pieces_log" &&
  grep -qE 'reducescatter: 2560 x .*algorithm direct' "$pieces_log"; then
  say "pieces through the own device buffers: 8-byte all-gathers and reduce-scatters went direct in pieces of 2560 elements"
elif grep -qE 'allgather: 2560 x ' "$pieces_log" && grep -qE 'reducescatter: 2560 x ' "$pieces_log"; then
  say "pieces through the own device buffers: ran in pieces of 2560 elements, staged (see step 4d's path)"
else
  say "pieces through the own device buffers: FAILED: no pieces in the log"
  status=1
fi

# ---- 5, 6. benchmarks ----
bench_flags=(--benchmark_repetitions=3 --benchmark_out_format=json)
# cuda_bench NAME TXT JSON SECONDS: runs perf/NAME; a skip with a GPU listed, or a benchmark
# that stopped with an error, fails the check.
cuda_bench() {
  step "$1" "$out/$2" "$4" "$build/perf/$1" --benchmark_min_time="${WEFT_GPU_CHECK_MIN_TIME:-0.05}" "${bench_flags[@]}" \
    --benchmark_out="$out/$3"
  if grep -q '^skipped:' "$out/$2"; then
    say "$1: $(grep -m 1 '^skipped:' "$out/$2")"
    [ -z "$gpu_why" ] && { say "$1: FAILED: skipped although nvidia-smi lists a GPU"; status=1; }
  fi
  if grep -q 'ERROR OCCURRED' "$out/$2"; then
    say "$1: FAILED: $(grep -c 'ERROR OCCURRED' "$out/$2") benchmarks stopped with an error ($2)"
    status=1
  fi
}
cuda_bench bench_compression_cuda bench_cuda.txt bench_cuda.json 120
cuda_bench bench_reduce_cuda bench_reduce_cuda.txt bench_reduce_cuda.json 90
step "bench_compression (CPU, one core)" "$out/bench_cpu.txt" 120 "$build/perf/bench_compression" \
  --benchmark_min_time="${WEFT_GPU_CHECK_CPU_MIN_TIME:-0.2}" "${bench_flags[@]}" --benchmark_out="$out/bench_cpu.json"

# Median GB/s of each benchmark and its share of the copy of the same run.
table() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
path, ceiling = sys.argv[1], sys.argv[2]
try:
    runs = json.load(open(path))["benchmarks"]
except Exception as e:
    print(f"(no results in {path}: {e})"); sys.exit(0)
rows = [r for r in runs if r.get("aggregate_name") == "median"] or [r for r in runs if r.get("run_type") == "iteration"]
rows = [r for r in rows if not r.get("error_occurred") and r["real_time"] > 0]
# Time per call (manual time where the benchmark uses it) and GB/s of the 64 MiB of float32 input.
name = lambda r: r["run_name"].replace("/manual_time", "").replace("/real_time", "")
us = {name(r): r["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[r["time_unit"]] for r in rows}
ref = us.get(ceiling)
print(f"| benchmark | codec | us / 64 MiB | GB/s | vs {ceiling} |")
print("| --- | --- | --- | --- | --- |")
for r in rows:
    t = us[name(r)]
    share = f"{100 * ref / t:.0f}%" if ref else "-"
    print(f"| {name(r).replace('BM_', '')} | {r.get('label', '')} | {t:.1f} | {(64 << 20) / t / 1e3:.1f} | {share} |")
EOF
}
# The reduction kernels: memory traffic (the benchmark's `traffic` counter, in 64 MiB units)
# per second, and its share of the device-to-device copy's traffic per second.
traffic_table() {
  python3 - "$1" <<'EOF'
import json, sys
try:
    runs = json.load(open(sys.argv[1]))["benchmarks"]
except Exception as e:
    print(f"(no results in {sys.argv[1]}: {e})"); sys.exit(0)
rows = [r for r in runs if r.get("aggregate_name") == "median"] or [r for r in runs if r.get("run_type") == "iteration"]
rows = [r for r in rows if not r.get("error_occurred") and r["real_time"] > 0]
scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
gbs = lambda r: r.get("traffic", 0) * (64 << 20) / (r["real_time"] * scale[r["time_unit"]]) / 1e3
copy = next((gbs(r) for r in rows if r["run_name"].startswith("BM_MemcpyD2D")), None)
print("| kernel | type | us / 64 MiB | memory GB/s | vs copy |")
print("| --- | --- | --- | --- | --- |")
for r in rows:
    share = f"{100 * gbs(r) / copy:.0f}%" if copy else "-"
    name = r["run_name"].split("/")[0].replace("BM_", "")
    print(f"| {name} | {r.get('label', '')} | {r['real_time'] * scale[r['time_unit']]:.1f} | {gbs(r):.0f} | {share} |")
EOF
}
if command -v python3 >/dev/null; then
  for pair in bench_cuda.json:BM_MemcpyD2D bench_cpu.json:BM_Memcpy; do
    json=${pair%%:*}
    [ -s "$out/$json" ] && { echo; echo "$json (median of 3):"; table "$out/$json" "${pair#*:}"; } >>"$summary"
  done
  [ -s "$out/bench_reduce_cuda.json" ] &&
    { echo; echo "bench_reduce_cuda.json (median of 3):"; traffic_table "$out/bench_reduce_cuda.json"; } >>"$summary"
fi
say "done, exit $status"
echo "==== summary.txt"
cat "$summary"
exit $status
