#!/usr/bin/env bash
# tools/format.sh [--check] — clang-format every C++ source of the project (100 columns).
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=$(command -v clang-format-14 || command -v clang-format)
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' | grep -v '^build/')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    if ! "$formatter" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
      echo "not formatted: $f (run tools/format.sh)"
      bad=1
    fi
  done
  exit $bad
fi
"$formatter" --style=file -i "${files[@]}"
