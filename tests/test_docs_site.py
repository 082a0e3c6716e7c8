"""The documentation site as a reader sees it: built strictly, without raw Sphinx roles, with each
notebook's plots and each Dataset shown once, and the package's URLs pointing at the docs.

The build needs the ``docs`` extra (``.ci/run`` installs it before running the test command). It
reuses the outputs committed in the notebooks (``DOCS_EXECUTE_NOTEBOOKS=false``): that they match
the code is checked by ``tests/test_notebooks_rendered.py`` and by nbmake running the notebooks.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: a Sphinx role as text (``:meth:`` before a name or before inline code), which no page should show
RAW_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|attr|mod|exc|data|obj|const|term|ref):(?:`|<code>)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocs_jupyter") is None:
        pytest.skip('needs the docs extra (pip install ".[docs]")')
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "DOCS_EXECUTE_NOTEBOOKS": "false", "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout + done.stderr == "", "a quiet build prints nothing: " + done.stdout + done.stderr
    return out


def test_no_page_shows_raw_sphinx_roles(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 12
    for page in pages:
        found = RAW_ROLE.findall(page.read_text(encoding="utf-8"))
        assert not found, f"{page.relative_to(site)} shows raw roles: {found[:5]}"


def test_role_pattern_finds_what_mkdocstrings_leaves() -> None:
    """The check above can fail: the pattern matches roles as the unconverted docstrings render them."""
    assert RAW_ROLE.search("see :meth:<code>read_object</code>")
    assert RAW_ROLE.search("see :func:`to_tensogram`")
    assert not RAW_ROLE.search("<code>read_object</code> and ratio 1:2")


def _png_outputs(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [
        "".join(out["data"]["image/png"]).replace("\n", "")
        for cell in cells
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]


def _xarray_reprs(notebook: Path) -> tuple[int, int]:
    """How many xarray objects the outputs display (with an HTML repr) and how many reprs they print as text."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    outputs = [out for cell in cells for out in cell.get("outputs", [])]
    shown = sum("xr-wrap" in "".join(out.get("data", {}).get("text/html", "")) for out in outputs)
    printed = sum("".join(out.get("text", "")).count("<xarray.") for out in outputs)
    return shown, printed


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_page_holds_its_plots(site: Path, notebook: Path) -> None:
    page = (site / "notebooks" / f"{notebook.stem}.html").read_text(encoding="utf-8")
    pngs = _png_outputs(notebook)
    assert pngs, f"{notebook.name} has no committed plot"
    shown = set(re.findall(r'src="data:image/png;base64,([^"]+)"', page))
    for png in pngs:
        base64.b64decode(png, validate=True)  # a real image, as committed
        assert png in shown, f"a plot of {notebook.name} is missing from its page"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_page_shows_each_dataset_once_as_html(site: Path, notebook: Path) -> None:
    """A displayed Dataset is xarray's HTML repr (its text form wraps long lines on a page), without the
    hidden text copy that the theme's CSS would un-hide; printed reprs stay the text they are."""
    page = (site / "notebooks" / f"{notebook.stem}.html").read_text(encoding="utf-8")
    shown, printed = _xarray_reprs(notebook)
    assert shown + printed > 0
    assert page.count('<div class="xr-wrap"') == shown
    assert page.count("&lt;xarray.") == printed
    assert not re.search(r"<pre class=[\"']xr-text-repr-fallback", page)


def test_xarray_reprs_keep_their_layout(site: Path) -> None:
    """The site's stylesheet takes the theme's list styles off xarray's repr (else rows get bullets)."""
    css = (site / "stylesheets" / "xarray.css").read_text(encoding="utf-8")
    assert ".xr-wrap li" in css and "list-style: none" in css
    assert 'href="../stylesheets/xarray.css"' in (site / "notebooks" / "quickstart.html").read_text(encoding="utf-8")


def test_api_reference_documents_the_accessor(site: Path) -> None:
    api = (site / "api.html").read_text(encoding="utf-8")
    assert "TensogramAccessor" in api and "to_tgm" in api


def test_project_and_engine_urls_are_absolute_or_absent() -> None:
    """No hosted site exists yet: a relative path (``docs/index.md``) means nothing in an installed wheel."""
    from xarray_tensogram.backend import TensogramBackendEntrypoint

    tomllib = pytest.importorskip("tomllib", reason="the standard library's TOML reader needs Python 3.11")
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"].get("urls", {})
    for url in [*urls.values(), TensogramBackendEntrypoint.url]:
        assert url == "" or re.match(r"https://[\w.-]+\.\w+/", url), url
    assert "Learn more at" not in repr(TensogramBackendEntrypoint())  # xarray's engine listing shows no bare path


#: a reference to the project's tracker ("issue 15", "issues 3 and 6"), which readers cannot follow
ISSUE_NUMBER = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def test_no_page_names_issue_numbers(site: Path) -> None:
    pages = {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in site.rglob("*.html")}
    pages["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, text in pages.items():
        text = re.sub(r"<[^>]+>", " ", text)  # visible text only
        assert not ISSUE_NUMBER.findall(text), f"{name} names {ISSUE_NUMBER.findall(text)[:3]}"
    assert ISSUE_NUMBER.search("measures every target of issue 15")  # the pattern itself can fail


def test_api_signatures_are_wrapped(site: Path) -> None:
    """Long signatures are formatted over several lines (mkdocstrings with ruff, from the docs extra)."""
    import html

    api = (site / "api.html").read_text(encoding="utf-8")
    signatures = re.findall(r'<div class="doc-signature[^>]*>(.*?)</div>', api, re.S)
    assert len(signatures) >= 10
    lines = [line for sig in signatures for line in html.unescape(re.sub(r"<[^>]+>", "", sig)).splitlines()]
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    assert any(line.startswith("    ") for line in lines)  # parameters on lines of their own


def _section(api_html: str, name: str) -> str:
    """The visible text of one object's entry on the API page, up to the next entry."""
    import html

    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", api_html)))
    start = text.index(f" {name} ¶")
    nxt = re.search(r" \w+ ¶", text[start + len(name) + 3 :])
    return text[start : start + len(name) + 3 + (nxt.start() if nxt else len(text))]


def test_api_page_shows_no_sphinx_target_syntax_or_private_bases(site: Path) -> None:
    import html

    text = html.unescape(re.sub(r"<[^>]+>", " ", (site / "api.html").read_text(encoding="utf-8")))
    assert "~xarray_tensogram" not in text  # :class:`~a.b.C` is shown as C, as Sphinx shows it
    assert "UnknownOptionError" in text
    assert not re.findall(r"Bases: _\w+", text)


def test_open_dataset_options_are_rendered_from_their_declaration(site: Path) -> None:
    from xarray_tensogram import options

    api = (site / "api.html").read_text(encoding="utf-8")
    for method in ("open_dataset", "open_datatree", "open_groups_as_dict"):
        entry = _section(api, method)
        assert "** options" not in entry and "**options" not in entry, method
        signature = entry[: entry.index(")")]
        for o in options.OPTIONS:
            assert f"{o.name} :" in signature, (method, o.name)
    entry = _section(api, "open_dataset")
    for o in options.OPTIONS:  # one parameter entry per option, with its declared text
        assert re.sub(r"``", "", o.doc)[:30] in entry.replace(" ,", ",").replace("  ", " "), o.name


def test_api_entries_say_what_they_refer_to(site: Path) -> None:
    api = (site / "api.html").read_text(encoding="utf-8")
    refs = _section(api, "kerchunk_refs")
    assert "as the module says" not in refs and "fill_value" in refs
    assert "refs" in _section(api, "main").split("Returns", 1)[0].replace("kerchunk_refs", "")
