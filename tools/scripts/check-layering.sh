#!/usr/bin/env bash
# The layering lint: prints every #include that crosses the table in cmake/layers.txt and exits
# 1 if there is one, 0 otherwise.
#   check-layering.sh [ROOT [TABLE]]   ROOT: the source tree (default: this repository);
#                                      TABLE: the layer table (default: ROOT/cmake/layers.txt)
#   check-layering.sh --self-test      proves, on a scratch tree, that bad includes are caught
# Includes are written from the repository root, so the first folder of an included path is
# the layer it belongs to; a file belongs to the layer of its top-level folder, whatever the
# subfolder (runtime/exec/x.cc is in runtime). An include that climbs with ".." is refused,
# since it cannot be checked. Every top-level folder with C/C++ sources needs a table row.
set -uo pipefail

source_globs=(--include='*.h' --include='*.hpp' --include='*.inc' --include='*.c'
              --include='*.cc' --include='*.cpp' --include='*.cu' --include='*.cuh')

# check_tree ROOT TABLE: the check itself.
check_tree() {
  local root=$1 table=$2
  local -A uses=()
  local row layer
  while IFS= read -r row; do
    [[ $row =~ ^([a-z_]+):[[:space:]]*(.*)$ ]] || continue
    uses[${BASH_REMATCH[1]}]=" ${BASH_REMATCH[2]} "
  done <"$table"
  if ((${#uses[@]} == 0)); then
    echo "$table: no layer rows" >&2
    return 2
  fi

  # The tree's top-level folders holding sources: those git knows (tracked or not ignored,
  # so build folders do not count), or every folder outside a git work tree.
  local folders
  if git -C "$root" rev-parse --show-toplevel 2>/dev/null | grep -qxF "$(cd "$root" && pwd -P)"; then
    folders=$(git -C "$root" ls-files --cached --others --exclude-standard |
              grep -E '^[^/]+/.*\.(h|hpp|inc|c|cc|cpp|cu|cuh)$' | cut -d/ -f1 | sort -u)
  else
    folders=$(cd "$root" && find . -mindepth 2 -type f \( -name '*.h' -o -name '*.hpp' \
              -o -name '*.inc' -o -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cu' \
              -o -name '*.cuh' \) | cut -d/ -f2 | sort -u)
  fi

  local bad=0 folder hit file rest line text included target
  for folder in $folders; do
    if [[ ! -v uses[$folder] ]]; then
      echo "$folder/: holds sources but has no row in $table"
      bad=1
      continue
    fi
    [[ ${uses[$folder]} == " * " ]] && continue
    while IFS= read -r hit; do
      file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
      [[ $text =~ include[[:space:]]*[\"\<]([^\"\>]+)[\"\>] ]] || continue
      included=${BASH_REMATCH[1]}
      if [[ /$included/ == */../* ]]; then
        echo "$file:$line: includes with '..', which the layering cannot check ($text)"
        bad=1
        continue
      fi
      [[ $included == */* ]] || continue  # a system header or one of include/
      target=${included%%/*}
      [[ $target == "$folder" || ! -d $root/$target ]] && continue  # own layer, or outside
      if [[ ${uses[$folder]} != *" $target "* ]]; then
        echo "$file:$line: $folder/ may not include $target/ ($text)"
        bad=1
      fi
    done < <(cd "$root" && grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' \
               "${source_globs[@]}" "$folder")
  done
  return $bad
}

# self_test: the check passes a tree that keeps the table, and fails each kind of crossing.
self_test() {
  local scratch failures=0
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  cat >"$scratch/layers.txt" <<'TABLE'
common:
transport: common
runtime: common transport
include:
tests: *
TABLE
  local tree=$scratch/tree
  mkdir -p "$tree"/{common,transport/shm,runtime/exec,include/weft,tests}
  echo '#include <vector>'                  >"$tree/common/status.h"
  echo '#include "common/status.h"'         >"$tree/transport/shm/segment.h"
  printf '#include "transport/shm/segment.h"\n#include "nccl.h"\n' >"$tree/runtime/exec/run.cc"
  echo '#include "nccl.h"'                  >"$tree/include/weft/weft.h"
  echo '#include "runtime/exec/run.h"'      >"$tree/tests/run_test.cc"

  # expect WANTED WHAT [FILE TEXT]: adds TEXT to FILE, runs the check, then undoes it.
  expect() {
    local wanted=$1 what=$2 file=${3:-} text=${4:-} out status
    [ -n "$file" ] && { mkdir -p "$(dirname "$tree/$file")"; echo "$text" >>"$tree/$file"; }
    out=$(check_tree "$tree" "$scratch/layers.txt")
    status=$?
    if ((status != wanted)); then
      echo "self-test FAILED: $what: exit $status, expected $wanted"; echo "$out"
      failures=1
    elif ((wanted != 0)) && ! grep -qF -e "$file:" -e "${file%%/*}/: " <<<"$out"; then
      echo "self-test FAILED: $what: the report does not name $file"; echo "$out"
      failures=1
    fi
    [ -n "$file" ] && sed -i '$d' "$tree/$file"
    return 0
  }
  expect 0 "a tree that keeps the layering"
  expect 1 "transport including runtime" transport/shm/segment.h '#include "runtime/exec/run.h"'
  expect 1 "an angle-bracket include" transport/tcp.cc '#include <runtime/exec/run.h>'
  expect 1 "a subfolder including a higher layer" transport/shm/x/deep.cc \
    '  #  include "runtime/api/init.h"'
  expect 1 "common including transport" common/status.h '#include "transport/shm/segment.h"'
  expect 1 "a layer including tests" runtime/exec/run.cc '#include "tests/helpers.h"'
  expect 1 "a public header including the tree" include/weft/weft.h '#include "common/status.h"'
  expect 1 "a relative include climbing out" transport/shm/segment.h '#include "../../runtime/x.h"'
  expect 1 "a folder without a row" newlayer/thing.cc '#include "common/status.h"'
  rm -rf "$tree/newlayer"
  expect 0 "a commented-out include" transport/shm/segment.h '// #include "runtime/exec/run.h"'
  expect 0 "the tree after the bad includes are undone"
  ((failures == 0)) && echo "check-layering self-test: passed"
  return $failures
}

if [ "${1:-}" = "--self-test" ]; then
  self_test
  exit $?
fi
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
check_tree "$root" "${2:-$root/cmake/layers.txt}"
