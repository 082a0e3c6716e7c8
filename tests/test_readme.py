"""Every Python block of README.md (and of each page of docs/) runs as written, in order, from an empty directory.

Blocks share one namespace (as a reader pasting them into one session would). A block can be
marked by an HTML comment on the line before its fence:

``<!-- readme-test: skip (REASON) -->``
    not run (e.g. it needs network access); the page must also say so in visible text
    ("not run by the test suite") between the previous block and this one;
``<!-- readme-test: needs EXTRA -->``
    runs only when the packages of that extra are installed (the test command installs
    ``test``, ``codecs`` and ``virtual``, so in CI these blocks run); the section holding the
    block must say in visible text that it needs that extra (a reader sees no HTML comment).
"""

from __future__ import annotations

import importlib.util
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*readme-test:\s*(skip|needs)\s*(.*?)\s*-->\s*$")
#: one importable module per extra, enough to tell whether the extra is installed
EXTRA_MODULES = {
    "codecs": "imagecodecs",
    "remote": "fsspec",
    "ml": "ml_dtypes",
    "virtual": "virtualizarr",
    "zarr": "zarr",
    "cfgrib": "cfgrib",  # not an extra of ours: the GRIB comparison opens the original with cfgrib
    "scipy": "scipy",  # in the test extra: the netCDF comparison opens the netCDF-3 original with scipy
}


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    code: str
    marker: tuple[str, str] | None
    before: str  # README text between the previous block and this one
    section: str  # text from the last heading above the block to the block


def _visible(text: str) -> str:
    """Markdown text as a reader of the rendered page sees it: without HTML comments, lower case."""
    return re.sub(r"<!--.*?-->", "", text, flags=re.S).lower()


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, with the marker comment just before each."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i, last_end, heading = 0, 0, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].startswith("#"):
                heading = i
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if m.group(1) == "python":
            prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            mm = MARKER.match(prev.strip())
            blocks.append(
                Block(
                    start + 1,
                    textwrap.dedent("\n".join(lines[start + 1 : j])),
                    (mm.group(1), mm.group(2)) if mm else None,
                    "\n".join(lines[last_end:start]),
                    "\n".join(lines[heading:start]),
                )
            )
        last_end = j + 1
        i = j + 1
    return blocks


def test_block_parser_reads_markers():
    text = (
        "intro\n```python\na = 1\n```\nnot run by the test suite\n<!-- readme-test: skip (net) -->\n```python\nb\n```\n"
    )
    blocks = python_blocks(text)
    assert [(b.line, b.code, b.marker) for b in blocks] == [(2, "a = 1", None), (7, "b", ("skip", "(net)"))]


def test_readme_has_examples_for_every_format():
    codes = "\n".join(b.code for b in python_blocks(README.read_text(encoding="utf-8")))
    for sample in ("era_pl.tgm", "forecast.tgm", "sample.tet", "sample.zt"):
        assert sample in codes


#: the documentation site's own pages (reference material lives there; one page includes the README's kwargs table)
DOC_PAGES = sorted((README.parent / "docs").glob("*.md"))


def _pages_with(pages: list[Path], kind: str | None = None) -> list[Path]:
    """The pages with a Python block (``kind`` None) or with a block marked ``kind``: the parametrizations
    below hold only pages their test has something to check on (no test id that checks nothing)."""
    return [
        page
        for page in pages
        if any(kind is None or (b.marker and b.marker[0] == kind) for b in python_blocks(page.read_text("utf-8")))
    ]


@pytest.mark.parametrize("page", _pages_with([README, *DOC_PAGES], "skip"), ids=lambda p: p.name)
def test_skipped_blocks_say_why_in_visible_text(page):
    for block in python_blocks(page.read_text(encoding="utf-8")):
        if block.marker and block.marker[0] == "skip":
            assert block.marker[1].strip("() "), f"{page.name} line {block.line}: a skip marker needs a reason"
            visible = _visible(block.before)
            assert "not run by the test suite" in visible, f"{page.name} line {block.line}: say visibly why not run"


@pytest.mark.parametrize("page", _pages_with([README, *DOC_PAGES], "needs"), ids=lambda p: p.name)
def test_blocks_needing_an_extra_say_so_in_visible_text(page):
    """A reader who installed only the package sees, before running a block, which extra it needs."""
    for block in python_blocks(page.read_text(encoding="utf-8")):
        if block.marker and block.marker[0] == "needs":
            visible = _visible(block.section)
            assert "needs" in visible and block.marker[1] in visible, (
                f"{page.name} line {block.line}: say in visible text that this block needs {block.marker[1]}"
            )


# third-party notices raised by the virtual Zarr blocks (zarr's string dtypes, fsspec's Parquet writer)
@pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")
@pytest.mark.filterwarnings("ignore:.*fastparquet")
@pytest.mark.filterwarnings("ignore:.*future.infer_string")
def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an empty directory: every file a block uses must come from the block
    ran = _run_blocks(README)
    assert ran >= 5


def test_docs_have_python_examples():
    assert sum(len(python_blocks(p.read_text(encoding="utf-8"))) for p in DOC_PAGES) >= 5


@pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")
@pytest.mark.filterwarnings("ignore:.*fastparquet")
@pytest.mark.filterwarnings("ignore:.*future.infer_string")
@pytest.mark.parametrize("page", _pages_with(DOC_PAGES), ids=lambda p: p.name)
def test_docs_python_blocks_run_in_order(page, tmp_path, monkeypatch):
    """The same rules for every page of docs/ with Python blocks: they run in order, in one namespace per page."""
    monkeypatch.chdir(tmp_path)
    assert _run_blocks(page) >= 1


def _run_blocks(path: Path) -> int:
    """Run the Python blocks of one Markdown file in order; the number run (skips an extra that is missing)."""
    namespace: dict[str, object] = {"__name__": "__readme__"}
    missing: list[str] = []
    ran = 0
    for block in python_blocks(path.read_text(encoding="utf-8")):
        if block.marker and block.marker[0] == "skip":
            continue
        if block.marker and block.marker[0] == "needs":
            extra = block.marker[1]
            module = EXTRA_MODULES.get(extra)
            assert module, f"{path.name} line {block.line}: unknown extra {extra!r}"
            if importlib.util.find_spec(module) is None:
                missing.append(f"line {block.line} (needs the {extra} extra)")
                continue
        try:
            exec(compile(block.code, f"{path.name}:{block.line}", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"{path.name} block at line {block.line} fails: {type(exc).__name__}: {exc}\n{block.code}")
        ran += 1
    for value in namespace.values():  # close what the blocks left open (Datasets hold file handles)
        close = getattr(value, "close", None)
        if callable(close) and type(value).__module__.startswith("xarray"):
            close()
    if missing:
        pytest.skip(f"{path.name} blocks not run, extra missing: " + ", ".join(missing))
    return ran
