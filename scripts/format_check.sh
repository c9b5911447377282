#!/usr/bin/env bash
# Fails when any tracked C++ file differs from clang-format (Google base, 100 columns).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
files=$(git ls-files '*.cc' '*.h' 2>/dev/null || find src tests benchmarks -name '*.cc' -o -name '*.h')
bad=()
for f in $files; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
  echo "clang-format would change: ${bad[*]}" >&2
  echo "run: clang-format -i ${bad[*]}" >&2
  exit 1
fi
echo "format-check: $(echo "$files" | wc -w) files, all formatted"
