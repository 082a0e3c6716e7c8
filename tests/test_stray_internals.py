"""Nothing of the machine the package was developed on reaches a user: paths, notes, provenance."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import xarray as xr

import xarray_tensogram as xt

ROOT = Path(__file__).resolve().parents[1]
#: absolute paths of a development machine (a home or work directory); built so this file does not match
DEVELOPMENT_PATH = re.compile("(?<![\\w.])/(?:" + "|".join(["wo" + "rk", "home", "Users"]) + r")/\w")
TEXT_FILES = [
    p
    for folder in ("xarray_tensogram", "tests", "tools", "benchmarks", "docs")
    for p in sorted((ROOT / folder).rglob("*"))
    if p.suffix in {".py", ".md", ".toml", ".cfg", ".txt"} and "/data/" not in p.as_posix()
] + [ROOT / name for name in ("README.md", "CONTRIBUTING.md", "pyproject.toml", "mkdocs.yml")]


@pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_development_machine_paths(path: Path) -> None:
    found = DEVELOPMENT_PATH.findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)} names a development machine's path: {found}"


def test_sample_tet_history_names_its_generator() -> None:
    """The history row says which tool wrote the sample, and that tool is the one that rebuilds it."""
    with xr.open_dataset(xt.sample_path("sample.tet"), engine="tensogram") as ds:
        history = ds.attrs["history"]
    source = history.split("write ", 1)[1]
    assert source.startswith("tools/") and (ROOT / source).is_file(), history
    assert "sample.tet" in (ROOT / source).read_text(encoding="utf-8")
