"""Write ``xarray_tensogram/params.tsv``: units, long name and CF standard name per ECMWF parameter.

The facts come from ecCodes' own definitions, asked through ecCodes (the ``eccodes`` package of
the test extras, which ships the definitions in ``eccodeslib``): for each candidate ``paramId``
a GRIB message is made from ecCodes' samples (GRIB2, else GRIB1), ``paramId`` is set, and
``shortName``, ``name``, ``units`` and ``cfName`` are read back, as cfgrib reads them. Candidates
cover the parameters of IFS, ERA5 (single and pressure levels) and AIFS outputs: ECMWF's local
tables 128 (1-260), 140 (ocean waves), 162 (vertical integrals), 228, 235 (mean rates) and 260 (WMO-shared
parameters ECMWF numbers from 260001). A ``paramId`` ecCodes does not know is skipped.

    pip install ".[test]" && python tools/make_param_table.py   # from the checkout's root

The header line records the ecCodes version. Run again when ecCodes is upgraded.
"""

from __future__ import annotations

from pathlib import Path

import eccodes

OUT = Path(__file__).resolve().parents[1] / "xarray_tensogram" / "params.tsv"
CANDIDATES = [
    *range(1, 261),
    *range(140001, 140300),
    *range(162001, 162114),
    *range(228001, 228261),
    *range(235001, 235100),
    *range(260001, 260700),
]
#: ecCodes' placeholders for "no such name"
_NONE = frozenset({"", "~", "unknown", "undefined"})


def describe(param_id: int) -> tuple[str, str, str, str] | None:
    """(shortName, units, name, cfName) as ecCodes gives them, or None when it does not know the id."""
    for sample in ("GRIB2", "GRIB1"):
        gid = eccodes.codes_grib_new_from_samples(sample)
        try:
            eccodes.codes_set(gid, "paramId", param_id)
            if eccodes.codes_get(gid, "paramId") != param_id:
                continue
            short, units, name = (str(eccodes.codes_get(gid, k)) for k in ("shortName", "units", "name"))
            cf_name = str(eccodes.codes_get(gid, "cfName")) if eccodes.codes_is_defined(gid, "cfName") else ""
        except eccodes.CodesInternalError:
            continue
        finally:
            eccodes.codes_release(gid)
        if short in _NONE or name in _NONE:
            return None
        return short, units, name, "" if cf_name in _NONE else cf_name
    return None


def _clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def main() -> None:
    rows = []
    for param_id in CANDIDATES:
        found = describe(param_id)
        if found is not None:
            rows.append("\t".join([str(param_id), *(_clean(x) for x in found)]))
    header = [
        f"# ECMWF parameters from ecCodes {eccodes.codes_get_api_version()} definitions (tools/make_param_table.py)",
        "paramId\tshortName\tunits\tlong_name\tstandard_name",
    ]
    OUT.write_text("\n".join(header + rows) + "\n")
    print(f"{OUT}: {len(rows)} parameters, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
