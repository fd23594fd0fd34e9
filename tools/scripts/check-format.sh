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
bad=0
while IFS= read -r -d '' file; do
  if ! "$formatter" --style=file --dry-run --Werror "$file" >/dev/null 2>&1; then
    echo "$file: not formatted (run: $formatter -i $file)"
    bad=1
  fi
done < <(find . \( -path ./build -o -path './build-*' -o -path ./.git \) -prune -o \
           -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.c' \) -print0)
exit $bad
