"""mkdocs hooks: a quiet build, a benchmark page that lists the scripts, docstrings without Sphinx roles.

* The placeholder ``<!-- benchmark-scripts -->`` in ``benchmarks.md`` is replaced at build time,
  so the page cannot drift from the scripts (a new script appears without editing the docs).
* The notebooks are converted with ``tools/jupyter/jupyter_nbconvert_config.json``: kernels start
  without ipykernel's start-up log (a warning about its local TCP transport), and images, then HTML
  come first, so a Dataset is shown as xarray's HTML repr (the text repr wraps its long lines on a
  page). xarray's HTML repr carries its text repr as a hidden fallback, which the theme's typography
  un-hides: the fallback is removed here, and ``docs/stylesheets/xarray.css`` takes the theme's list
  styles off the repr.
* The package's docstrings are numpydoc, which uses Sphinx roles (``:func:`to_tensogram```);
  mkdocstrings renders them as raw text, so the API pages get them as plain code instead.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "<!-- benchmark-scripts -->"

# set when mkdocs loads this module, before any notebook is executed (kernels inherit the environment)
os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
    p for p in (str(ROOT / "tools" / "jupyter"), os.environ.get("JUPYTER_CONFIG_PATH", "")) if p
)

#: a Sphinx role before inline code, as mkdocstrings renders ``:meth:`read_object``` in HTML
ROLE_HTML = re.compile(r":(?:py:)?(?:func|meth|class|attr|mod|exc|data|obj|const|term|ref):(<code>)")


def benchmark_sections() -> str:
    """One section per ``benchmarks/*.py``: its name, then its module docstring verbatim."""
    parts = []
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or "(no description)"
        parts.append(f"## `benchmarks/{script.name}`\n\n```text\n{doc}\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Fill the benchmark page's placeholder; other pages pass through unchanged."""
    if PLACEHOLDER in markdown:
        return markdown.replace(PLACEHOLDER, benchmark_sections())
    return markdown


#: Sphinx's ``~`` before a dotted target: show only its last part (``~xarray_tensogram.errors.X`` -> ``X``)
TILDE_HTML = re.compile(r"<code>~(?:\w+\.)*(\w+)</code>")


def strip_roles(html: str) -> str:
    """``:meth:<code>read_object</code>`` (a role mkdocstrings leaves as text) becomes the code alone, and
    ``:class:<code>~a.b.Error</code>`` becomes ``<code>Error</code>``, as Sphinx would show it."""
    return TILDE_HTML.sub(r"<code>\1</code>", ROLE_HTML.sub(r"\1", html))


#: the text copy xarray puts in its HTML repr for front ends without its CSS (hidden by that CSS)
TEXT_FALLBACK = re.compile(r"<pre class=['\"]xr-text-repr-fallback['\"]>.*?</pre>", re.S)


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    """Sphinx roles that the docstrings rendered as raw text are dropped, keeping their code; xarray's
    HTML reprs lose their hidden text copy, so each Dataset is shown once, as HTML."""
    return TEXT_FALLBACK.sub("", strip_roles(html))
