"""The bundled samples: the public path functions and the ERA-like pressure-level sample.

The ERA-like sample is checked against the reference decoder (``tensogram``): every object it
holds must land at the (step, level) its MARS keys name, with the reference's values.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_tensogram as xt

tensogram = pytest.importorskip("tensogram")


def test_sample_paths_are_the_shipped_files():
    folder = os.path.join(os.path.dirname(xt.__file__), "samples")
    shipped = sorted(n for n in os.listdir(folder) if n.endswith((".tgm", ".tet", ".zt")))
    assert [os.path.basename(p) for p in xt.sample_paths()] == shipped
    assert xt.samples.paths() == xt.sample_paths()
    assert {"era_pl.tgm", "forecast.tgm", "sample.tet", "sample.zt"} <= set(shipped)
    for name in shipped:
        assert xt.sample_path(name) == os.path.join(folder, name)
        assert os.path.isfile(xt.sample_path(name))


def test_unknown_sample_names_the_existing_ones():
    with pytest.raises(FileNotFoundError, match=r"no bundled sample named 'era\.tgm'.*era_pl\.tgm"):
        xt.sample_path("era.tgm")


def test_cli_sample_paths_still_works():
    from xarray_tensogram.cli import sample_paths

    assert sample_paths() == xt.sample_paths()


def test_era_sample_is_small():
    assert os.path.getsize(xt.sample_path("era_pl.tgm")) < 300_000


def test_era_sample_maps_every_object_like_the_reference_decoder():
    path = xt.sample_path("era_pl.tgm")
    ref = tensogram.TensogramFile.open(path)
    with xr.open_dataset(path, engine="tensogram", chunks={}) as ds:
        assert dict(ds.sizes) == {"step": 4, "level": 3, "latitude": 37, "longitude": 72}
        assert set(ds.data_vars) == {"t", "z"}
        assert ds["t"].dims == ("step", "level", "latitude", "longitude")
        assert ds["t"].attrs["units"] == "K" and ds["z"].attrs["units"] == "m**2 s**-2"
        assert ds["time"].values == np.datetime64("2024-01-01T00:00:00")
        seen = 0
        for i in range(len(ref)):
            msg = ref[i]
            for meta, (_, values) in zip(msg.metadata.base, msg.objects, strict=True):
                if "mars" not in meta:  # latitude / longitude coordinate objects
                    np.testing.assert_array_equal(ds[meta["name"]].values, values)
                    continue
                mars = meta["mars"]
                field = ds[mars["param"]].sel(step=pd.Timedelta(hours=mars["step"]), level=mars["levelist"])
                np.testing.assert_array_equal(field.values, values)
                seen += 1
        assert seen == 4 * 3 * 2
        np.testing.assert_array_equal(ds["valid_time"].values, np.datetime64("2024-01-01T00:00:00") + ds["step"].values)
