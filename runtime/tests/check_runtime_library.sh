#!/usr/bin/env bash
# Checks the shipped libkiln_runtime.so: it depends on no compiler, Python or GPU driver library
# (only libc, libdl, pthreads, libm and the C++ runtime; OpenCL and CUDA are opened with dlopen),
# exports only the Kiln* C API, and stays small.
set -euo pipefail
lib="$1"
# 256 KiB: the host runtime and the OpenCL and CUDA back ends.
max_stripped_bytes=$((256 * 1024))

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "NEEDED: $(echo $needed)"
status=0
for dep in $needed; do
  case "$dep" in
    libc.so.*|libdl.so.*|libpthread.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) ;;
    libOpenCL.so*|libcuda.so*|libnvrtc.so*|libcudart.so*)
      echo "GPU driver linked: $dep (drivers must be opened with dlopen)"; status=1 ;;
    *) echo "unexpected dependency: $dep"; status=1 ;;
  esac
done
if ldd "$lib" | grep -Ei 'llvm|python|kiln_ir|opencl|libcuda|nvrtc'; then
  echo "libkiln_runtime.so must not load LLVM, Python, the compiler or a GPU driver"
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
