#!/usr/bin/env bash
# Makes `import kiln` work from any directory in the default python3: writes a .pth file into
# its site-packages that points at this checkout's python/ folder (an editable install), and
# installs the `kiln` command (tune, db) next to that python3's scripts.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$here/python" > "$site/kiln.pth"
interpreter="$("$PYTHON" -c 'import sys; print(sys.executable)')"
for bin in "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["scripts"])')" /usr/local/bin; do
  if [ -d "$bin" ] && [ -w "$bin" ]; then
    printf '#!%s\n# The kiln command line (python/kiln/cli.py).\nimport sys\nfrom kiln.cli import main\nsys.exit(main())\n' \
      "$interpreter" > "$bin/kiln"
    chmod +x "$bin/kiln"
  fi
done
