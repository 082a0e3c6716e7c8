"""GRIB test corpus: messages built from ecCodes' own samples, converted the way ECMWF's converter does.

The reference wheels are built without the GRIB converter, so :func:`convert` re-does what
``tensogram-grib`` 0.24.0 writes (see ``docs/mapping.md``, "Files from ECMWF's GRIB converter"): one float64
``ntensor`` per GRIB message, shaped ``[Nj, Ni]`` or ``[numberOfPoints]``, whose ``base[i]``
holds ``mars`` (the ecCodes ``mars`` namespace with native types and sentinels dropped, plus
``grid`` and, for standard-scan regular_ll grids, ``area``) and ``grib_repro`` (the
``geography``, ``parameter``, ``time`` and ``vertical`` namespaces plus a few scalar keys),
and ``grib`` (six more namespaces) with ``preserve_all_keys``. The encoding is done by the
reference ``tensogram.encode``. The oracle for every test is cfgrib on the same GRIB bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import eccodes  # test extra; test modules importorskip it before importing this one
import numpy as np
import tensogram

#: scalar keys the converter adds to ``grib_repro`` besides the four namespaces
REPRO_SCALAR_KEYS = (
    "edition",
    "discipline",
    "gridType",
    "packingType",
    "bitsPerValue",
    "decimalScaleFactor",
    "tablesVersion",
    "centre",
    "subCentre",
    "productionStatusOfProcessedData",
    "typeOfProcessedData",
    "typeOfGeneratingProcess",
    "generatingProcessIdentifier",
    "setLocalDefinition",
    "grib2LocalSectionNumber",
    "marsClass",
    "marsType",
    "marsStream",
    "experimentVersionNumber",
)
REPRO_NAMESPACES = ("geography", "parameter", "time", "vertical")
ALL_NAMESPACES = ("ls", "geography", "time", "vertical", "parameter", "statistics")
_MISSING_INT = 2147483647


# ---------------------------------------------------------------------------------------------
# building GRIB messages
# ---------------------------------------------------------------------------------------------


def field_values(n: int, seed: float) -> np.ndarray:
    """Smooth, distinct values per field (exactly representable after 16-bit packing is not needed: IEEE)."""
    x = np.arange(n, dtype=np.float64)
    return 250.0 + 20.0 * np.sin(x / 7.0 + seed) + seed


def grib_message(
    sample: str,
    *,
    param: int,
    date: int = 20260404,
    time: int = 0,
    step: int = 0,
    level: int | None = None,
    geometry: dict[str, Any] | None = None,
    seed: float = 0.0,
    number: int | None = None,
) -> bytes:
    """One GRIB2 message from an ecCodes sample, with an ECMWF local section (class/type/stream/expver).

    Values are stored as IEEE 64-bit so cfgrib and the converter see exactly the same numbers.
    """
    h = eccodes.codes_grib_new_from_samples(sample)
    try:
        eccodes.codes_set(h, "packingType", "grid_ieee")  # first: changing the packing resets the point count
        eccodes.codes_set(h, "precision", 2)  # 64-bit IEEE
        ensemble = number is not None
        for key, value in (
            ("setLocalDefinition", 1),
            ("grib2LocalSectionNumber", 1),
            ("marsClass", "od"),
            ("marsType", "pf" if ensemble else "fc"),
            ("marsStream", "enfo" if ensemble else "oper"),
            ("experimentVersionNumber", "0001"),
        ):
            eccodes.codes_set(h, key, value)
        if ensemble:  # an ensemble member: product template 1
            eccodes.codes_set(h, "productDefinitionTemplateNumber", 1)
            eccodes.codes_set(h, "perturbationNumber", number)
            eccodes.codes_set(h, "numberOfForecastsInEnsemble", 50)
        for key, value in (geometry or {}).items():
            eccodes.codes_set(h, key, value)
        if geometry:
            eccodes.codes_set(h, "numberOfDataPoints", geometry["Ni"] * geometry["Nj"])
        eccodes.codes_set(h, "paramId", param)
        if level is not None:
            eccodes.codes_set(h, "level", level)
        eccodes.codes_set(h, "dataDate", date)
        eccodes.codes_set(h, "dataTime", time)
        eccodes.codes_set(h, "step", step)
        n = eccodes.codes_get(h, "numberOfPoints")
        eccodes.codes_set_values(h, field_values(n, seed))
        return bytes(eccodes.codes_get_message(h))
    finally:
        eccodes.codes_release(h)


def grib_file(
    sample: str,
    params: Sequence[int],
    steps: Sequence[int],
    levels: Sequence[int | None] = (None,),
    geometry: dict[str, Any] | None = None,
    date: int = 20260404,
    time: int = 0,
    numbers: Sequence[int | None] = (None,),
) -> bytes:
    """Messages ordered like a MARS retrieval: member, param, step, level (each field distinct)."""
    out = []
    for n in numbers:
        for p in params:
            for s in steps:
                for lev in levels:
                    seed = p % 97 + s / 10.0 + (lev or 0) / 1000.0 + (n or 0) * 3.0
                    out.append(
                        grib_message(
                            sample,
                            param=p,
                            step=s,
                            level=lev,
                            geometry=geometry,
                            seed=seed,
                            date=date,
                            time=time,
                            number=n,
                        )
                    )
    return b"".join(out)


#: a global 10-degree grid that starts at the dateline, as ECMWF open data does (0.25 degree there)
DATELINE_GLOBAL = {
    "Ni": 36,
    "Nj": 19,
    "latitudeOfFirstGridPointInDegrees": 90.0,
    "latitudeOfLastGridPointInDegrees": -90.0,
    "longitudeOfFirstGridPointInDegrees": 180.0,
    "longitudeOfLastGridPointInDegrees": 170.0,
    "iDirectionIncrementInDegrees": 10.0,
    "jDirectionIncrementInDegrees": 10.0,
}
#: a regional grid scanned south to north
SOUTH_TO_NORTH = {
    "Ni": 8,
    "Nj": 5,
    "jScansPositively": 1,
    "latitudeOfFirstGridPointInDegrees": 30.0,
    "latitudeOfLastGridPointInDegrees": 50.0,
    "longitudeOfFirstGridPointInDegrees": 350.0,
    "longitudeOfLastGridPointInDegrees": 14.5,
    "iDirectionIncrementInDegrees": 3.5,
    "jDirectionIncrementInDegrees": 5.0,
}


# ---------------------------------------------------------------------------------------------
# what the converter writes
# ---------------------------------------------------------------------------------------------


def _value(h: Any, key: str) -> Any:
    """A key's value as the converter keeps it (native type, sentinels and non-finite values dropped)."""
    try:
        size = eccodes.codes_get_size(h, key)
        if size > 1:
            arr = eccodes.codes_get_array(h, key)
            if len(arr) > 8192:
                return None
            if np.asarray(arr).dtype.kind == "f":
                return [float(v) for v in arr] if np.all(np.isfinite(arr)) else None
            return [int(v) for v in arr]
        value = eccodes.codes_get(h, key)
    except eccodes.CodesInternalError:
        return None
    if isinstance(value, str):
        return None if value in ("MISSING", "not_found") else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (int, np.integer)):
        return None if int(value) in (_MISSING_INT, -_MISSING_INT) else int(value)
    if isinstance(value, bytes):
        return value
    return None


def _namespace(h: Any, namespace: str) -> dict[str, Any]:
    it = eccodes.codes_keys_iterator_new(h, namespace)
    eccodes.codes_skip_duplicates(it)
    names = []
    while eccodes.codes_keys_iterator_next(it):
        names.append(eccodes.codes_keys_iterator_get_name(it))
    eccodes.codes_keys_iterator_delete(it)
    out = {}
    for name in names:
        v = _value(h, name)
        if v is not None:
            out[name] = v
    return out


def _area(h: Any) -> list[float] | None:
    """``[N, W, S, E]`` for standard-scan regular_ll grids; a dateline-first global grid gets W - 360."""
    g = {
        k: _value(h, k)
        for k in (
            "latitudeOfFirstGridPointInDegrees",
            "longitudeOfFirstGridPointInDegrees",
            "latitudeOfLastGridPointInDegrees",
            "longitudeOfLastGridPointInDegrees",
            "iScansNegatively",
            "jScansPositively",
            "Ni",
            "iDirectionIncrementInDegrees",
        )
    }
    if g["iScansNegatively"] != 0 or g["jScansPositively"] != 0 or any(v is None for v in g.values()):
        return None
    ni, inc = g["Ni"], g["iDirectionIncrementInDegrees"]
    if ni < 2 or inc <= 0:
        return None
    north, south = g["latitudeOfFirstGridPointInDegrees"], g["latitudeOfLastGridPointInDegrees"]
    west, east = g["longitudeOfFirstGridPointInDegrees"], g["longitudeOfLastGridPointInDegrees"]
    if west > east:
        if abs(ni * inc - 360.0) >= 0.5 * inc or abs(east - (west - 360.0) - (ni - 1) * inc) >= 0.5 * inc:
            return None
        west -= 360.0
    if north <= south or west >= east:
        return None
    return [north, west, south, east]


def converter_object(h: Any, preserve_all_keys: bool = False) -> tuple[dict[str, Any], np.ndarray]:
    """(base entry, values array) for one GRIB message, as ``tensogram-grib`` builds them."""
    mars = _namespace(h, "mars")
    grid = _value(h, "gridType")
    if grid is not None:
        mars["grid"] = grid
    if grid == "regular_ll":
        area = _area(h)
        if area is not None:
            mars["area"] = area
    repro: dict[str, Any] = {}
    for ns in REPRO_NAMESPACES:
        repro.update(_namespace(h, ns))
    for key in REPRO_SCALAR_KEYS:
        v = _value(h, key)
        if v is not None:
            repro[key] = v
    entry: dict[str, Any] = {"mars": mars, "grib_repro": repro}
    if preserve_all_keys:
        entry["grib"] = {ns: keys for ns in ALL_NAMESPACES if (keys := _namespace(h, ns))}
    values = np.asarray(eccodes.codes_get_values(h), dtype=np.float64)
    ni, nj = eccodes.codes_get(h, "Ni"), eccodes.codes_get(h, "Nj")
    if 0 < ni < _MISSING_INT and nj > 0:  # the fixed converter: reduced grids are 1-D
        values = values.reshape(nj, ni)
    return entry, values


def _messages(grib: bytes) -> Iterable[Any]:
    offset = 0
    while offset < len(grib):
        h = eccodes.codes_new_from_message(grib[offset:])
        try:
            size = eccodes.codes_get_message_size(h)
            yield h
        finally:
            eccodes.codes_release(h)
        offset += size


def convert(grib: bytes, grouping: str = "merge_all", preserve_all_keys: bool = False) -> bytes:
    """What ``tensogram.convert_grib`` writes for GRIB bytes (``merge_all``: one message, or ``one_to_one``).

    The wheel is built without GRIB support, so the layout is rebuilt here from the converter's
    documented behaviour and encoded with the reference ``tensogram.encode``.
    """
    objects = [converter_object(h, preserve_all_keys) for h in _messages(grib)]

    def desc(a: np.ndarray) -> dict[str, Any]:
        return {
            "type": "ntensor",
            "shape": list(a.shape),
            "dtype": "float64",
            "byte_order": "little",
            "encoding": "none",
            "filter": "none",
            "compression": "none",
        }

    if grouping == "merge_all":
        return bytes(tensogram.encode({"base": [e for e, _ in objects]}, [(desc(a), a) for _, a in objects]))
    if grouping == "one_to_one":
        return b"".join(bytes(tensogram.encode({"base": [e]}, [(desc(a), a)])) for e, a in objects)
    raise ValueError(grouping)


def write_pair(
    tmp: Path, name: str, grib: bytes, grouping: str = "merge_all", preserve_all_keys: bool = False
) -> tuple[Path, Path]:
    """``<name>.grib2`` and its conversion ``<name>.tgm`` in ``tmp``."""
    gpath, tpath = tmp / f"{name}.grib2", tmp / f"{name}.tgm"
    gpath.write_bytes(grib)
    tpath.write_bytes(convert(grib, grouping, preserve_all_keys))
    return gpath, tpath
