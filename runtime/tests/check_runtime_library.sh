#!/usr/bin/env bash
# Checks the shipped libkiln_runtime.so: it depends on no compiler or Python library (only libc,
# libdl, pthreads, libm and the C++ runtime), exports only the Kiln* C API, and stays small.
set -euo pipefail
lib="$1"
max_stripped_bytes=$((200 * 1024))

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "NEEDED: $(echo $needed)"
status=0
for dep in $needed; do
  case "$dep" in
    libc.so.*|libdl.so.*|libpthread.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) ;;
    *) echo "unexpected dependency: $dep"; status=1 ;;
  esac
done
if ldd "$lib" | grep -Ei 'llvm|python|kiln_ir'; then
  echo "libkiln_runtime.so must not load LLVM, Python or the compiler"
  status=1
fi

exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
stray=$(echo "$exported" | grep -v '^Kiln' || true)
if [ -n "$stray" ]; then
  echo "symbols exported besides the Kiln* C API:"
  echo "$stray"
  status=1
fi
echo "exported: $(echo "$exported" | wc -l) Kiln* functions"

stripped=$(mktemp)
trap 'rm -f "$stripped"' EXIT
strip --strip-all -o "$stripped" "$lib"
size=$(stat -c %s "$stripped")
echo "stripped size: $size bytes (limit $max_stripped_bytes)"
if [ "$size" -ge "$max_stripped_bytes" ]; then
  echo "libkiln_runtime.so grew past its size budget"
  status=1
fi
exit $status
