#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (.clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h' 2>/dev/null || true)
[ -z "$files" ] && exit 0
bad=$(echo "$files" | xargs clang-format --dry-run 2>&1 | grep -oE '^[^:]+\.(cc|h)' | sort -u || true)
if [ -n "$bad" ]; then
  echo "clang-format: these files are not formatted (run: clang-format -i FILE):"
  echo "$bad"
  exit 1
fi
echo "clang-format: all C++ files formatted"
