#!/usr/bin/env bash
# Tests mirror the tree: a test declared in tests/FOLDER/*.cmake carries FOLDER as its label
# (unit, integration, gpu, abi, netns, lint) and no other folder's. Prints each label that
# names another test folder and exits 1 if there is one, 0 otherwise.
#   check-test-labels.sh [TESTS_DIR]   default: this repository's tests/
set -uo pipefail
tests=${1:-$(cd "$(dirname "$0")/../../tests" && pwd)}
folders=$(find "$tests" -mindepth 2 -maxdepth 2 -name '*.cmake' -printf '%h\n' | xargs -n1 basename | sort -u)
bad=0
for fragment in "$tests"/*/*.cmake; do
  folder=$(basename "$(dirname "$fragment")")
  # Every word after LABELS up to the next keyword: bare, quoted or ;-separated.
  while IFS=: read -r line labels; do
    for label in $(tr '";' '  ' <<<"$labels"); do
      [[ $label =~ ^[A-Z_]+$ ]] && break  # the next property keyword ends the list
      if [[ $label != "$folder" && $label != '${weft_test_folder}' ]] && grep -qx -- "$label" <<<"$folders"; then
        echo "$fragment:$line: label '$label' is another folder's; tests in $folder/ carry '$folder'"
        bad=1
      fi
    done
  done < <(grep -noE 'LABELS[[:space:]]+("[^"]*"|[^[:space:])]+)' "$fragment" | sed -E 's/:LABELS[[:space:]]+/:/')
done
exit $bad
