#!/usr/bin/env bash
# The ThreadSanitizer stage builds only `threaded_targets` (sanitizer-test-sets.sh): every
# executable of the sanitizer areas that holds a test `threaded` selects must be among them, or
# its tests would not run there, in silence. Checked against a full build's test list (the
# commands ctest runs). Prints each missing executable and exits 1 if there is one.
#   check-sanitizer-targets.sh BUILD_DIR [SOURCE_DIR]
set -euo pipefail
build=$(cd "$1" && pwd)
source_dir=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tools/scripts/sanitizer-test-sets.sh
source "$source_dir/tools/scripts/sanitizer-test-sets.sh"
# The executables the areas' fragments declare (tests/*/AREA.cmake).
fragments=()
for area in ${sanitizer_areas//;/ }; do
  for fragment in "$source_dir"/tests/*/"$area".cmake; do [ -f "$fragment" ] && fragments+=("$fragment"); done
done
in_areas=$(grep -hoE '(weft_test|add_executable)\([A-Za-z0-9_]+' "${fragments[@]}" | sed 's/.*(//' | sort -u)
# The executables the selected tests run (any word of a command that names a file in the build).
selected=$(cd "$build" && ctest -N -R "$threaded" --show-only=json-v1 |
  python3 -c '
import json, os, sys
for test in json.load(sys.stdin)["tests"]:
    for word in test.get("command", []):
        if word.startswith(sys.argv[1]) and os.path.isfile(word):
            print(os.path.basename(word))' "$build/" | sort -u)
required=$(comm -12 <(echo "$in_areas") <(echo "$selected"))
missing=$(comm -23 <(echo "$required") <(tr ' ' '\n' <<<"$threaded_targets" | sort -u))
if [ -n "$missing" ]; then
  echo "threaded tests live in executables threaded_targets leaves out (tools/scripts/sanitizer-test-sets.sh):"
  echo "$missing"
  exit 1
fi
echo "threaded_targets holds all $(wc -l <<<"$required") executables with threaded tests"
