"""Install instructions and install hints that work for a package on no index.

``pip install xarray-tensogram`` finds nothing, so every hint must name an install that works from a
checkout of the sources or from a built wheel, and every extra it names must exist in pyproject.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from xarray_tensogram.codecs.optional import OPTIONAL_MODULES, require
from xarray_tensogram.errors import MissingCodecError, install_hint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
USER_TEXT = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "xarray_tensogram").rglob("*.py")),
]


@pytest.mark.parametrize("extra", sorted({"codecs", "remote", "virtual"} | {e for _, e in OPTIONAL_MODULES.values()}))
def test_hint_names_an_existing_extra_and_installs_that_work(extra):
    assert extra in EXTRAS
    hint = install_hint(extra)
    assert f'pip install ".[{extra}]"' in hint and "checkout" in hint
    assert "wheel" in hint and hint.count(f'[{extra}]"') == 2  # and the built wheel's path followed by the extra


def test_missing_package_error_says_how_to_install_it():
    with pytest.raises(MissingCodecError) as info:
        require("no_such_module_for_this_test", "decoding the test codec")
    message = str(info.value)
    assert "'no_such_module_for_this_test'" in message and 'pip install ".[codecs]"' in message


@pytest.mark.parametrize("path", USER_TEXT, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_text_tells_users_to_install_from_an_index(path):
    """``pip install xarray-tensogram`` / ``"xarray-tensogram[extra]"`` cannot work: no index has it."""
    lines = [line for line in path.read_text().splitlines() if "finds nothing" not in line]  # saying it fails
    bad = re.findall(r"pip install ['\"]?xarray-tensogram\b[^`\n]*", "\n".join(lines))
    assert not bad, f"{path.name}: {bad}"
