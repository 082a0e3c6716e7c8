"""mkdocs hook: the benchmark page lists every script of benchmarks/ with its own docstring.

The placeholder ``<!-- benchmark-scripts -->`` in ``benchmarks.md`` is replaced at build time,
so the page cannot drift from the scripts (a new script appears without editing the docs).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "<!-- benchmark-scripts -->"


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
