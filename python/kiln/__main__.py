"""``python3 -m kiln`` runs the kiln command line (kiln/cli.py)."""
import sys

from .cli import main

sys.exit(main())
