#!/bin/sh
# Every ncclX / pncclX function that NVIDIA's libnccl.so.2 exports must be exported by weft's
# libnccl.so.2 too, so that any program or plugin linked against NVIDIA's library loads with
# weft's (a missing symbol is a load-time failure, not an error code).
#
# usage: exported_symbols_test.sh WEFT_LIBNCCL [NVIDIA_LIBNCCL]
#   NVIDIA_LIBNCCL defaults to /usr/local/cuda/lib64/libnccl.so.2; without it the test exits
#   77 (skipped) and says why.
#
# Ignored NVIDIA exports (not part of NCCL's API; each one justified):
#   ncclResetDebugInitInternal  declared in no header NVIDIA ships (nccl.h, nccl_device*),
#                               has no pncclX profiling twin unlike every API function, and
#                               is the internal helper behind the deprecated, exported
#                               ncclResetDebugInit -- which IS required here.
# Everything else is required, including the device-API host functions (ncclDevCommCreate,
# ncclTeam*, ncclGin*, ncclLsa*, ncclLLA2A*): programs built with nccl_device.h link them.
# Extra symbols in weft (weftX, or ncclX that NVIDIA lacks) are listed but allowed.
set -u

weft=${1:-}
nvidia=${2:-/usr/local/cuda/lib64/libnccl.so.2}
ignored="ncclResetDebugInitInternal"

if [ -z "$weft" ]; then
  echo "usage: $0 WEFT_LIBNCCL [NVIDIA_LIBNCCL]" >&2
  exit 2
fi
if ! command -v nm >/dev/null 2>&1; then
  echo "skipped: nm (binutils) not found"
  exit 77
fi
if [ ! -e "$nvidia" ]; then
  echo "skipped: NVIDIA's libnccl.so.2 not found at $nvidia (install NCCL or pass its path)"
  exit 77
fi
if [ ! -e "$weft" ]; then
  echo "FAILED: weft's library $weft does not exist" >&2
  exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Defined dynamic symbols that are functions (T, or W for weak aliases such as pncclX),
# without version suffixes (name@@VER).
functions() {
  nm -D --defined-only "$1" | awk '$2 ~ /^[TtWwi]$/ { sub(/@.*/, "", $3); print $3 }' |
    grep -E '^p?nccl[A-Z]' | sort -u
}

functions "$nvidia" >"$tmp/nvidia" || { echo "FAILED: nm on $nvidia" >&2; exit 1; }
functions "$weft" >"$tmp/weft" || { echo "FAILED: nm on $weft" >&2; exit 1; }
if [ ! -s "$tmp/nvidia" ]; then
  echo "FAILED: no ncclX functions found in $nvidia" >&2
  exit 1
fi
printf '%s\n' $ignored | sort -u >"$tmp/ignored"
comm -23 "$tmp/nvidia" "$tmp/ignored" >"$tmp/required"
comm -23 "$tmp/required" "$tmp/weft" >"$tmp/missing"
comm -13 "$tmp/nvidia" "$tmp/weft" >"$tmp/extra"

echo "NVIDIA $nvidia: $(wc -l <"$tmp/nvidia") ncclX/pncclX functions ($(wc -l <"$tmp/required") required, ignored: $ignored)"
echo "weft   $weft: $(wc -l <"$tmp/weft") ncclX/pncclX functions"
if [ -s "$tmp/extra" ]; then
  echo "exported by weft only (allowed): $(tr '\n' ' ' <"$tmp/extra")"
fi
if [ -s "$tmp/missing" ]; then
  echo "FAILED: $(wc -l <"$tmp/missing") functions NVIDIA exports are missing from weft:"
  sed 's/^/  /' "$tmp/missing"
  exit 1
fi
echo "OK: weft exports every required NVIDIA ncclX/pncclX function"
exit 0
