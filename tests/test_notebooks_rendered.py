"""The committed notebooks carry their outputs, so a reader sees the plots without running them.

``tools/render_notebooks.py`` executes them in place; this test fails when a notebook was edited
and committed without being re-rendered (a code cell without an execution count, counts not
running 1, 2, 3 ... top to bottom, an error output, or no plot at all).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"quickstart.ipynb", "dask_remote.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_rendered_top_to_bottom_with_plots(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{path.name}: re-run tools/render_notebooks.py ({counts})"
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"], f"{path.name} has an error output"
    plots = [o for o in outputs if "image/png" in o.get("data", {})]
    assert plots, f"{path.name} shows no plot"


#: the widest plot a page shows at its own size (about the width of the documentation's text column)
MAX_PLOT_WIDTH = 1000


def _png_width(data: str) -> int:
    import base64
    import struct

    head = base64.b64decode(data.replace("\n", "")[:64])
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int(struct.unpack(">I", head[16:20])[0])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_plots_are_not_shrunk_to_fit_a_page(path):
    """A figure wider than the page is scaled down with its labels: a row of five maps was unreadable."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    pngs = [
        "".join(o["data"]["image/png"])
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    ]
    widths = [_png_width(p) for p in pngs]
    assert widths and max(widths) <= MAX_PLOT_WIDTH, widths


def test_quickstart_names_valid_time_as_itself():
    nb = json.loads((NOTEBOOKS[0].parent / "quickstart.ipynb").read_text(encoding="utf-8"))
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert "Name: valid_time" in text
