#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (.clang-format) would write.
# A missing clang-format is a failure too: a check that cannot run must not pass.
# CLANG_FORMAT names another binary (e.g. clang-format-14).
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "check_format.sh: $clang_format was not found, so the C++ formatting cannot be checked;" \
    "install it (Debian: apt-get install clang-format) or set CLANG_FORMAT" >&2
  exit 2
fi
if ! files=$(git ls-files '*.cc' '*.h'); then
  echo "check_format.sh: git ls-files failed; run the check in a git checkout of kiln" >&2
  exit 2
fi
[ -z "$files" ] && exit 0
# --dry-run --Werror exits non-zero when a file would change (or cannot be read or parsed).
if output=$(printf '%s\n' "$files" | xargs -d '\n' "$clang_format" --dry-run --Werror 2>&1); then
  echo "clang-format: all C++ files formatted"
  exit 0
fi
bad=$(printf '%s\n' "$output" | grep -oE '^[^:]+\.(cc|h)' | sort -u || true)
echo "clang-format: these files are not formatted (run: $clang_format -i FILE):"
printf '%s\n' "${bad:-$output}"
exit 1
