#!/usr/bin/env bash
# CI's sanitizer stage: the tests of the code where threads, sockets, shared memory and the C API
# meet (test areas runtime, transport, common and abi), built with AddressSanitizer+UBSan, and the
# threaded ones among them under ThreadSanitizer. CUDA, PyTorch and the perf tools are left out of these
# builds: nothing here runs device code, and they would double the build time.
#   run-sanitizer-tests.sh            both builds, in build-address-undefined/ and build-thread/
#   WEFT_SANITIZER_BUILDS=thread ...  only the ThreadSanitizer one (or address,undefined)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/scripts/sanitizer-test-sets.sh
source "$root/tools/scripts/sanitizer-test-sets.sh"  # sanitizer_areas, threaded, threaded_targets
# Under a sanitizer the leak tests compare only fds and threads (each loop would leak one), so
# 10 loops find what 50 do; 50 took 30 s under TSan.
export WEFT_LEAK_LOOPS=${WEFT_LEAK_LOOPS:-10}
for sanitizers in ${WEFT_SANITIZER_BUILDS:-address,undefined thread}; do
  build=$root/build-${sanitizers//,/-}
  export WEFT_BUILD_DIR=$build
  export WEFT_CMAKE_ARGS="-DWEFT_SANITIZE=$sanitizers -DWEFT_WITH_CUDA=OFF -DWEFT_WITH_TORCH=OFF -DWEFT_BUILD_PERF=OFF -DWEFT_TEST_AREAS=$sanitizer_areas"
  # UCX is not built with ThreadSanitizer, so TSan cannot see its synchronization (its
  # async thread, its locks) and would report races inside it; the TSan build leaves UCX out,
  # the ASan one keeps it. (libucm's patches to libc's mmap family, which crash TSan, are
  # off anyway: transport/ucx/ucx_library.h.)
  [ "$sanitizers" = thread ] && WEFT_CMAKE_ARGS+=" -DWEFT_WITH_UCX=OFF"
  echo "== sanitizers $sanitizers: $build" >&2
  start=$(date +%s)
  if [ "$sanitizers" = thread ]; then
    WEFT_BUILD_TARGETS=$threaded_targets bash "$root/tools/scripts/run-tests.sh" -R "$threaded"
  else
    # Unit tests time nothing and share nothing: two at a time (the reduction kernels' tests
    # are half of this stage's test time under ASan). The rest one at a time, as always.
    bash "$root/tools/scripts/run-tests.sh" -L unit -j 2
    # (ctest keeps the first -LE, slow.) The 8-rank channel schedules, pure schedule coverage
    # and 36 s under ASan, run in the main stage; here their 2-4 rank forms do.
    bash "$root/tools/scripts/run-tests.sh" -L '^(integration|abi)$' -E 'MatchReference/channels_8ranks'
  fi
  echo "== sanitizers $sanitizers: passed in $(($(date +%s) - start)) s" >&2
done
