"""Small sample files shipped inside the package, for examples, notebooks and first contact.

=================  ==========================================================================
``era_pl.tgm``     Tensogram: ERA-like temperature ``t`` and geopotential ``z`` at 3 pressure
                   levels and 4 forecast steps on a 5-degree grid (24 packed objects)
``forecast.tgm``   Tensogram: ``2t`` and ``msl`` at 4 steps on a 10-degree grid (zstd)
``grib_pl.tgm``    Tensogram converted from GRIB (``grib_pl.grib2``, shipped next to it):
                   ``t`` and ``q``, 3 steps x 2 pressure levels, opened as cfgrib would
``sample.tet``     Tetration layout v1: tiled datasets with labelled coordinates
``sample.zt``      zTensor v0.1: a few named tensors with custom attributes
=================  ==========================================================================

``netcdf/`` holds a pair that is not listed by :func:`paths`: ``era5_sfc.nc``, an ERA5-like netCDF-3 file
(packed ``t2m`` and ``sst``, an unlimited ``time``), and ``era5_sfc.tgm``, its conversion by ECMWF's
netCDF converter (``--split-by record``), which opens as the ``.nc`` does (docs/mapping.md).

The files are package data (these functions work from an installed wheel too). ``tools/make_sample_era.py``,
``tools/make_sample_tgm.py``, ``make_grib_sample.py`` and ``make_netcdf_sample.py`` regenerate them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import PurePath

__all__ = ["path", "paths"]


def paths() -> list[str]:
    """Absolute paths (strings, ready for ``xr.open_dataset``) of every bundled ``.tgm``, ``.tet`` and ``.zt``
    sample file, sorted by name: ``era_pl.tgm``, ``forecast.tgm``, ``grib_pl.tgm``, ``sample.tet``, ``sample.zt``."""
    folder = resources.files(__name__)  # anything else in it (the GRIB source, netcdf/) is no sample
    return sorted(str(p) for p in folder.iterdir() if p.name.endswith((".tgm", ".tet", ".zt")))


def path(name: str) -> str:
    """Absolute path of the bundled sample file ``name`` (e.g. ``"era_pl.tgm"``); a ``FileNotFoundError`` listing
    the samples when there is none of that name.

    >>> import xarray as xr
    >>> import xarray_tensogram as xt
    >>> ds = xr.open_dataset(xt.sample_path("era_pl.tgm"), engine="tensogram")
    >>> dict(ds.sizes)
    {'step': 4, 'level': 3, 'latitude': 37, 'longitude': 72}
    """
    found = {PurePath(p).name: p for p in paths()}
    if name not in found:
        raise FileNotFoundError(f"no bundled sample named {name!r}; the samples are: {', '.join(found)}")
    return found[name]
