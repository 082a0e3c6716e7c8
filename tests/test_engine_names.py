"""The README's engine-name note, checked: with another package registering ``"tensogram"`` (as the
reference tensogram-xarray does), xarray warns about the clash, and ``engine="xtensogram"`` and the
engine class still open files with this package.

A stand-in distribution registers the clashing entry point, in a fresh process so that xarray's
cached engine list of this one is left alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, warnings
import xarray as xr
import xarray_tensogram as xt
from xarray_tensogram.backend import TensogramBackendEntrypoint

path = xt.sample_path("forecast.tgm")
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    xr.backends.list_engines()
print(json.dumps({
    "warned": [str(w.message) for w in said if "entrypoints for the engine name tensogram" in str(w.message)],
    "alias": sorted(xr.open_dataset(path, engine="xtensogram").data_vars),
    "class": sorted(xr.open_dataset(path, engine=TensogramBackendEntrypoint).data_vars),
}))
"""


def test_alias_and_class_open_with_this_package_when_the_name_clashes(tmp_path: Path) -> None:
    (tmp_path / "other_tensogram_backend.py").write_text(
        textwrap.dedent(
            """
            import xarray as xr
            from xarray.backends import BackendEntrypoint

            class Backend(BackendEntrypoint):
                def open_dataset(self, filename_or_obj, *, drop_variables=None):
                    return xr.Dataset({"from_the_other_package": 1})
            """
        )
    )
    info = tmp_path / "other_tensogram_backend-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-tensogram-backend\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[xarray.backends]\ntensogram = other_tensogram_backend:Backend\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["warned"] and "other_tensogram_backend" in result["warned"][0]
    assert result["alias"] == result["class"] == ["2t", "msl"]
