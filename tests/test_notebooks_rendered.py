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
