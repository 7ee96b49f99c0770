#!/usr/bin/env bash
# Configures, builds and runs the deployment example on a module:
#   examples/deploy_cpp/run.sh MODULE.so [sym=value ...]
# The runtime comes from KILN_RUNTIME_DIR (a runtime build dir or <prefix>/lib/cmake/kiln_runtime)
# when set; otherwise it is built from runtime/ and installed into the example's build folder.
# KILN_DEPLOY_BUILD_DIR picks that folder (default: build-deploy_cpp at the repository root).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 MODULE.so [sym=value ...]" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${KILN_DEPLOY_BUILD_DIR:-$root/build-deploy_cpp}"
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi

if [ -n "${KILN_RUNTIME_DIR:-}" ]; then
  runtime_dir="$KILN_RUNTIME_DIR"
else
  cmake -S "$root/runtime" -B "$build/runtime" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "$build/runtime" > /dev/null
  cmake --install "$build/runtime" --prefix "$build/prefix" > /dev/null
  runtime_dir="$build/prefix/lib/cmake/kiln_runtime"
  [ -d "$runtime_dir" ] || runtime_dir="$(dirname "$(find "$build/prefix" -name kiln_runtimeConfig.cmake | head -1)")"
fi

cmake -S "$here" -B "$build/example" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -Dkiln_runtime_DIR="$runtime_dir" > /dev/null
cmake --build "$build/example" > /dev/null
"$build/example/deploy" "$@"
