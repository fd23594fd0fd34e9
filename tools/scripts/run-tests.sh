#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test not labelled
# slow (ctest -L slow runs those). Tests that need what this machine lacks (a GPU, an RDMA
# device) report themselves skipped, with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
bash "$root/tools/scripts/build.sh"
cd "$build"
ctest --output-on-failure --timeout 900 -LE slow -j 1 "$@"
