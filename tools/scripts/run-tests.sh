#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test not labelled
# slow (ctest -L slow runs those). Tests that need what this machine lacks (a GPU, an RDMA
# device) report themselves skipped, with the reason. WEFT_BUILD_DIR and WEFT_CMAKE_ARGS
# choose the build (see build.sh), WEFT_BUILD_TARGETS what it builds; a sanitizer build gets the
# sanitizer options below.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
bash "$root/tools/scripts/build.sh"
# Stop at the first report, with a stack; the caller's own settings win.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tools/sanitizers/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
cd "$build"
if [ $# -gt 0 ]; then
  ctest --output-on-failure --timeout 900 -LE slow -j 1 "$@"
  exit
fi
# Unit tests time nothing and share nothing (the sanitizer stage runs them the same way): two at
# a time. Everything else one at a time: multi-process tests, perf tools and namespace hosts
# keep both cores to themselves. (ctest keeps only the first -LE, hence one pattern.)
status=0
ctest --output-on-failure --timeout 900 -L '^unit$' -LE '^slow$' -j 2 || status=$?
ctest --output-on-failure --timeout 900 -LE '^(unit|slow)$' -j 1 || status=$?
exit $status
