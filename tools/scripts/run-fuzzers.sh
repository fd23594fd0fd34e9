#!/usr/bin/env bash
# CI's fuzzing stage: every libFuzzer target of tests/fuzz (what weft parses from files,
# settings and peers), built with clang, AddressSanitizer and UBSan in build-fuzz/, run from a
# copy of its seed corpus (tests/fuzz/corpus/<target>). In CI each target runs a fixed number
# of inputs from a fixed seed (about 20 s each here). That makes a run nearly repeatable, not
# exactly: CI once reached an hwloc crash at input 85,086 that the same seed never reached here
# (the path taken depends on more than the seed). A crash CI finds is a real defect: reproduce
# it from the input or the stack, fix it, add the input to the corpus. Any crash, leak, time-out or
# sanitizer report fails the stage; the input is kept in build-fuzz/crashes/ and the
# fuzzer's last lines are printed.
#   run-fuzzers.sh                            all targets, fixed runs (CI)
#   WEFT_FUZZ_SECONDS=3600 run-fuzzers.sh     random seeds for an hour in all, on demand
#   run-fuzzers.sh fuzz_tuning_file           one target
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${WEFT_FUZZ_BUILD_DIR:-$root/build-fuzz}
total=${WEFT_FUZZ_SECONDS:-}
# Inputs per target in CI: about 20 s each with ASan on this machine (2 vCPUs).
declare -A ciRuns=([fuzz_topology_xml]=100000 [fuzz_shm_segment]=300000 [fuzz_bootstrap_reply]=400000
  [fuzz_tcp_frames]=200000 [fuzz_tcp_striped_parts]=200000 [fuzz_bootstrap_root]=100000 [fuzz_status_reply]=100000)
bash "$root/tools/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DWEFT_FUZZ=ON -DWEFT_SANITIZE=address,undefined -DWEFT_WITH_CUDA=OFF \
  -DWEFT_WITH_UCX=OFF -DWEFT_WITH_IBVERBS=OFF -DWEFT_WITH_TORCH=OFF -DWEFT_BUILD_TESTS=OFF \
  -DWEFT_BUILD_PERF=OFF >/dev/null
cmake --build "$build" --target fuzzers
targets=("$@")
if ((${#targets[@]} == 0)); then
  for source in "$root"/tests/fuzz/fuzz_*.cc; do targets+=("$(basename "$source" .cc)"); done
fi
each=$((${total:-0} / ${#targets[@]}))
((each > 0)) || each=1
mkdir -p "$build/crashes"
export NCCL_DEBUG=VERSION                  # the inputs fail on purpose: no WARN line per input
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$root/tests/fuzz/lsan.supp
failed=0
for target in "${targets[@]}"; do
  corpus=$(mktemp -d)
  cp -r "$root/tests/fuzz/corpus/$target/." "$corpus/" 2>/dev/null || true
  log=$build/$target.log
  start=$(date +%s)
  if [ -n "$total" ]; then limit=(-max_total_time="$each"); else limit=(-seed=1 -runs="${ciRuns[$target]:-500000}"); fi
  # hwloc loads its libxml2 reader as a plugin and unloads it, and both leak on a refused XML
  # (not weft's memory, and from an unloaded module LeakSanitizer cannot name to suppress).
  leaks=1
  [ "$target" = fuzz_topology_xml ] && leaks=0
  if ASAN_OPTIONS=detect_leaks=$leaks "$build/tests/fuzz/$target" "${limit[@]}" -detect_leaks=$leaks -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/crashes/$target-" -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
    echo "fuzz $target: ${runs:-?} inputs in $(($(date +%s) - start)) s, no crash"
  else
    echo "fuzz $target: FAILED (input in $build/crashes/, log $log)"
    tail -40 "$log"
    failed=1
  fi
  rm -rf "$corpus"
done
exit $failed
