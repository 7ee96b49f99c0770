#!/usr/bin/env bash
# Makes `import kiln` work from any directory in the default python3: writes a .pth file into
# its site-packages that points at this checkout's python/ folder (an editable install).
set -euo pipefail
PYTHON="${PYTHON:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$here/python" > "$site/kiln.pth"
