"""Executes every notebook under the given folder (in order of name) and fails on the first
error. The test command runs the tutorials with it."""
import pathlib
import sys

import nbformat
from nbclient import NotebookClient


def main(folder: str) -> int:
    notebooks = sorted(pathlib.Path(folder).glob("*.ipynb"))
    for path in notebooks:
        print(f"running {path} ...", flush=True)
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=1200, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    print(f"{len(notebooks)} notebook(s) ran without error")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "tutorials"))
