#!/usr/bin/env bash
# The tree stays formatted with .clang-format: lists each C, C++ and CUDA source that
# clang-format 14 (Debian 12's) would change and exits 1 if there is one, 0 otherwise.
# `git clang-format` formats only the lines a change touches.
#   check-format.sh [REPO_ROOT]   default: this repository
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
formatter=$(command -v clang-format-14 || command -v clang-format) || {
  echo "clang-format not installed (tools/scripts/install-deps.sh installs clang-format-14)"
  exit 1
}
cd "$root" || exit 1
# Many files to a process and two processes at once: one process per file spent most of this
# check starting clang-format.
report=$(find . \( -path ./build -o -path './build-*' -o -path ./.git \) -prune -o \
           -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.c' \) -print0 |
         xargs -0 -n 64 -P 2 "$formatter" --style=file --dry-run --Werror 2>&1 >/dev/null)
status=$?
# clang-format names each file it would change in "FILE:LINE:COL: error: code should be clang-formatted".
unformatted=$(grep -oE '^[^:]+:[0-9]+:[0-9]+: error: code should be clang-formatted' <<<"$report" | cut -d: -f1 | sort -u)
for file in $unformatted; do
  echo "$file: not formatted (run: $formatter -i $file)"
done
if [ -n "$unformatted" ]; then exit 1; fi
if [ $status -ne 0 ]; then
  echo "clang-format failed:"
  echo "$report"
  exit 1
fi
exit 0
