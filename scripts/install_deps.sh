#!/usr/bin/env bash
# Installs what kiln needs on Debian 12: system packages from apt (only those missing, so a
# second run is quick) and Python packages from pip into the default python3.
set -euo pipefail

# OpenCL: the runtime builds against opencl-c-headers and opens libOpenCL.so.1 (ocl-icd-libopencl1)
# at run time; PoCL (pocl-opencl-icd) runs the OpenCL tests on the CPU. The interpreter calls
# extern C functions through libffi (libffi-dev); the te.extern tests call OpenBLAS (libopenblas0).
APT_PACKAGES=(
  build-essential cmake ninja-build ccache clang-format
  llvm-16-dev libsqlite3-dev libxgboost-dev libgtest-dev libdlpack-dev nlohmann-json3-dev
  pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-headers
  libffi-dev libopenblas0
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
if ! "$PYTHON" -c "import sys; from importlib.metadata import version
import re
req=[l.split('>=')[0].strip() for l in open('$here/python/requirements.txt') if l.strip() and not l.startswith('#')]
[version(r) for r in req]" >/dev/null 2>&1; then
  echo "install_deps: installing Python packages"
  "$PYTHON" -m pip install -q --disable-pip-version-check -r "$here/python/requirements.txt"
fi
