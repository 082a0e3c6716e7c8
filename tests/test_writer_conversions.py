"""Every bundled sample and every readable file in tests/data/, written with each of our writers.

Each conversion must come back identical (``assert_identical``, dtypes included, apart from the
reader's provenance attributes), be refused with a package error naming the variable, or lose only
what a warning names item by item. Nothing silent. The oracle is the Dataset the reader gives for
the original file, which the reference-made fixtures' manifests already check.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_tensogram as xt
from xarray_tensogram.errors import MetadataError, TruncatedFileError, XarrayTensogramError

DATA = Path(__file__).parent / "data"
#: Dataset attributes the reader adds to describe what it read (not data the writers must carry)
PROVENANCE_ATTRS = {"tensogram_wire_version"}
WRITERS = {"tgm": xt.to_tensogram, "tet": xt.to_tetr, "zt": xt.to_ztensor}


#: the files in tests/data/ that are there to be refused on reading: path -> the package error and its message
REFUSED_ON_READ: dict[str, tuple[type[XarrayTensogramError], str]] = {
    "tetr/reference/plan.tet": (MetadataError, r"THST footer, byte 360: footer JSON is not valid UTF-8 JSON"),
    "ztensor/edge/size_zero_no_index.zt": (TruncatedFileError, r"a v0\.1 file needs at least 17 bytes"),
}


def _sources() -> list[Path]:
    files = sorted(
        p
        for p in DATA.rglob("*")
        if p.suffix in (".tgm", ".tet", ".zt")
        and "corrupt" not in p.parts
        and p.relative_to(DATA).as_posix() not in REFUSED_ON_READ
    )
    return files + [Path(p) for p in xt.sample_paths()]


def _open(path: Path) -> xr.Dataset:
    """The Dataset the reader gives, loaded (any error fails the test: the files refused by design are pinned
    in REFUSED_ON_READ and left out of the conversions)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_dataset(path, engine="tensogram") as ds:
            return ds.load()


@pytest.mark.parametrize("name", sorted(REFUSED_ON_READ))
def test_files_refused_by_design_are_refused(name: str) -> None:
    """Each file left out of the conversions is refused on reading, with the package error it is there for."""
    error, message = REFUSED_ON_READ[name]
    with pytest.raises(error, match=message):
        _open(DATA / name)


def _comparable(ds: xr.Dataset) -> xr.Dataset:
    """Without provenance attributes; bfloat16 as its bits (xarray's NaN-aware equality does not know it)."""
    out = ds.copy()
    out.attrs = {k: v for k, v in ds.attrs.items() if k not in PROVENANCE_ATTRS}
    for name, var in ds.variables.items():
        if var.dtype.name == "bfloat16":
            out[name] = var.copy(data=np.asarray(var.values).view(np.uint16))
    return out


def _warned(messages: list[str], name: Any) -> bool:
    return any(repr(str(name)) in m or f"'{name}'" in m for m in messages)


def _check_losses(original: xr.Dataset, back: xr.Dataset, messages: list[str]) -> None:
    """Every difference between ``original`` and ``back`` is an attribute that a warning names."""
    for key in set(original.attrs) - set(back.attrs):
        assert _warned(messages, key), f"Dataset attribute {key!r} dropped silently"
    stripped = original.copy()
    stripped.attrs = dict(back.attrs)
    for name, var in original.variables.items():
        if name in back.variables:
            for key in set(var.attrs) - set(back[name].attrs):
                assert _warned(messages, key), f"attribute {key!r} of {name!r} dropped silently"
            stripped[name].attrs = dict(back[name].attrs)
    xr.testing.assert_identical(back, stripped)


@pytest.mark.parametrize("ext", sorted(WRITERS))
@pytest.mark.parametrize("source", _sources(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_conversion_is_identical_refused_or_warned(source: Path, ext: str, tmp_path: Path) -> None:
    original = _open(source)
    target = tmp_path / f"out.{ext}"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            WRITERS[ext](original, target)
        except XarrayTensogramError as exc:  # refused: the message names the variable (or the bad name)
            names = [str(n) for n in original.variables]
            assert any(f"'{n}'" in str(exc) for n in names) or "Invalid name" in str(exc), str(exc)
            assert not target.exists()
            return
    messages = [str(w.message) for w in record]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_dataset(target, engine="tensogram") as back:
            back = back.load()
    a, b = _comparable(original), _comparable(back)
    try:
        xr.testing.assert_identical(b, a)
    except AssertionError:
        _check_losses(a, b, messages)
