#!/usr/bin/env bash
# The main job: builds weft, then runs a 2-rank all-reduce sweep (float sum, 8 B to 256 MiB)
# on this machine with weftrun and all_reduce_perf, with ordinary and with ncclMemAlloc'd
# buffers, beside the single-thread memcpy ceiling measured in the same run and the
# shared-memory bounds derived from it. Extra arguments go to all_reduce_perf.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${WEFT_BUILD_DIR:-$root/build}
bash "$root/tools/scripts/build.sh" >&2
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
python3 "$root/perf/allreduce_ceiling_report.py" "$build" "$@"
