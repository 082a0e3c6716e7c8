"""Execute the notebooks in place so that the committed files carry their outputs and plots.

Git hosts and Jupyter show a committed notebook with its outputs, so a reader sees the plots
without running anything. Run this after editing a notebook (needs the ``test`` extra)::

    python tools/render_notebooks.py            # every notebook in notebooks/
    python tools/render_notebooks.py notebooks/quickstart.ipynb

Volatile cell metadata (execution timestamps) is dropped so that re-rendering unchanged code
changes only what the code prints. ``tests/test_notebooks_rendered.py`` checks that the
committed notebooks were executed top to bottom and hold their plots; the test command also
re-executes them (nbmake), and the documentation build executes them again for the site.
"""

from __future__ import annotations

import pathlib
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]


def render(path: pathlib.Path) -> None:
    """Execute one notebook (working directory: its folder) and write it back with outputs."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata.get("language_info", {}).pop("version", None)
    nbformat.write(nb, path)
    print(f"rendered {path.relative_to(ROOT)} ({path.stat().st_size / 1e3:.0f} kB)")


def main(argv: list[str]) -> None:
    paths = [pathlib.Path(a).resolve() for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        render(path)


if __name__ == "__main__":
    main(sys.argv[1:])
