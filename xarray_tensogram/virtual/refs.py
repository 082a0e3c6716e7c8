"""Kerchunk references for virtual datasets, written so that round trips stay identical: VirtualiZarr's
kerchunk writer, with three of its habits corrected (:func:`kerchunk_refs`); and the object stores that read
the referenced files (:func:`registry_for`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import xarray as xr

from ..errors import UnsupportedError, XarrayTensogramError
from .checked import ChangeCheckedStore
from .combine import check_combinable

__all__ = ["combine_virtual", "kerchunk_refs", "local_registry", "open_virtual_dataset", "registry_for", "write_refs"]


def file_url(path: str | os.PathLike[str]) -> str:
    """``file://`` URL of a local path, other URLs unchanged."""
    s = os.fspath(path)
    return s if "://" in s else Path(s).resolve().as_uri()


def local_registry() -> Any:
    """An ObjectStoreRegistry that reads local files (``file://`` URLs)."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file://": LocalStore()})


def _s3_store(bucket: str, options: Mapping[str, Any]) -> Any:
    """An obstore S3 store configured from s3fs-style ``storage_options``."""
    from obstore.store import S3Store

    client = dict(options.get("client_kwargs") or {})
    endpoint = client.get("endpoint_url") or options.get("endpoint_url")
    config = {  # an obstore S3Config (a TypedDict), with what is given
        "access_key_id": options.get("key"),
        "secret_access_key": options.get("secret"),
        "endpoint": endpoint,
        "skip_signature": bool(options.get("anon")),
        "region": client.get("region_name") or options.get("region_name") or "us-east-1",
    }
    client_options: Any = {"allow_http": True} if endpoint and str(endpoint).startswith("http://") else None
    given: Any = {k: v for k, v in config.items() if v}
    return S3Store(bucket, config=given, client_options=client_options)


def registry_for(urls: Iterable[str], storage_options: Mapping[str, Any] | None = None) -> Any:
    """An ObjectStoreRegistry able to read every URL: local files, ``http(s)://`` servers, ``s3://`` buckets
    (configured from s3fs-style ``storage_options``: ``key``, ``secret``, ``anon``, ``client_kwargs.endpoint_url``).
    HTTP(S) files are asked for their version now (one ``HEAD`` each): a chunk of a file changed since raises
    :class:`~xarray_tensogram.errors.FileChangedError` (:mod:`.checked`)."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import HTTPStore, LocalStore

    registry: Any = ObjectStoreRegistry()
    stores: dict[str, Any] = {}
    for url in urls:
        parsed = urlparse(file_url(url))
        prefix = f"{parsed.scheme}://{parsed.netloc}"  # file://: all local files
        if prefix not in stores:
            if parsed.scheme in ("http", "https"):
                options: Any = {"allow_http": True} if parsed.scheme == "http" else None
                store: Any = ChangeCheckedStore(HTTPStore.from_url(prefix, client_options=options))
            elif parsed.scheme in ("file", "s3"):
                store = LocalStore() if parsed.scheme == "file" else _s3_store(parsed.netloc, storage_options or {})
            else:
                raise UnsupportedError(
                    f"virtual references for {url!r}: no object store for {parsed.scheme!r} URLs "
                    f"(local, http(s) and s3 are supported)"
                )
            registry.register(prefix, store)
            stores[prefix] = store
        if isinstance(stores[prefix], ChangeCheckedStore):  # each file's version noted now, checked at every read
            stores[prefix].remember(parsed.path.lstrip("/"))
    return registry


def open_virtual_dataset(
    path: str | os.PathLike[str],
    *,
    registry: Any = None,
    parser: Any = None,
    loadable_variables: Iterable[str] | None = None,
    **options: Any,
) -> xr.Dataset:
    """Virtual dataset of one file: ``virtualizarr.open_virtual_dataset`` with the parser matching its format
    (``options`` go to it) and a registry that reads it, unless given."""
    from virtualizarr import open_virtual_dataset as _open

    from .parsers import parser_for

    url = file_url(path)
    parser = parser if parser is not None else parser_for(url, **options)
    registry = registry if registry is not None else registry_for([url], options.get("storage_options"))
    vds: xr.Dataset = _open(
        url,
        registry=registry,
        parser=parser,
        loadable_variables=list(loadable_variables) if loadable_variables is not None else None,
    )
    return vds


def _v2_fill(encoded: Any, dtype: np.dtype) -> Any:
    """A ``_FillValue`` attribute as the v3 parsers store it (xarray's encoding) -> Zarr v2 JSON."""
    from xarray.backends.zarr import FillValueCoder

    value = FillValueCoder.decode(encoded, dtype) if isinstance(encoded, str) and dtype.kind in "fc" else encoded
    if dtype.kind in "fc":
        v = float(value)
        return "NaN" if np.isnan(v) else ("Infinity" if v == np.inf else "-Infinity" if v == -np.inf else v)
    return value


def kerchunk_refs(vds: xr.Dataset) -> dict[str, Any]:
    """Kerchunk references (version 1, as a dict) of a virtual dataset, so that opening them gives the same Dataset.

    VirtualiZarr's kerchunk writer makes them, with three of its habits corrected: a 0-d array's chunk is keyed
    ``name/0`` (not ``name/``); chunks of size 0 (a loaded zero-size array) become size 1, as Zarr needs; each Zarr
    v2 ``fill_value`` is the variable's ``_FillValue``, else NaN for floats (a missing Tensogram object reads as
    NaN, as in the backend) and ``null`` otherwise (VirtualiZarr writes the v3 default, 0 for integers, which
    xarray's Zarr v2 reader would mask, turning integer arrays into floats).
    """
    refs = vds.vz.to_kerchunk(format="dict")
    inner = refs["refs"]
    for key in [k for k in inner if k.endswith("/") and not k.endswith("//")]:  # a 0-d array's chunk
        inner[key + "0"] = inner.pop(key)
    for key in [k for k in inner if k.endswith("/.zarray") or k == ".zarray"]:
        prefix = key[: -len(".zarray")]
        zarray, zattrs = (
            json.loads(v) if isinstance(v, str) else dict(v) for v in (inner[key], inner.get(prefix + ".zattrs", "{}"))
        )
        dtype = np.dtype(zarray["dtype"]) if isinstance(zarray["dtype"], str) else None
        # loaded zero-size arrays are written with zero-size chunks, which Parquet references divide by
        zarray["chunks"] = [max(1, int(c)) for c in zarray.get("chunks", [])]
        if "_FillValue" in zattrs and dtype is not None:
            zarray["fill_value"] = _v2_fill(zattrs.pop("_FillValue"), dtype)
        else:
            zarray["fill_value"] = "NaN" if dtype is not None and dtype.kind == "f" else None
        inner[key] = json.dumps(zarray, separators=(",", ":"))
        inner[prefix + ".zattrs"] = json.dumps(zattrs, separators=(",", ":"))
    return dict(refs)


_MAX_NAME = 200


def write_refs(vds: xr.Dataset, out: str | os.PathLike[str]) -> None:
    """Write a virtual dataset's kerchunk references: ``.json`` or ``.parquet`` (a directory)."""
    refs = kerchunk_refs(vds)
    out = os.fspath(out)
    if out.endswith(".parquet"):
        from kerchunk.df import refs_to_dataframe

        long = [str(n) for n in vds.variables if len(str(n).encode()) > _MAX_NAME]
        if long:  # Parquet references keep one directory per variable
            raise UnsupportedError(
                f"{out}: variable name {long[0][:40]!r}... is longer than {_MAX_NAME} bytes, too "
                f"long for a directory of Parquet references; write JSON references instead"
            )

        refs_to_dataframe(refs, url=out)
        return
    from ..io import atomic_write

    with atomic_write(out) as f:
        f.write(json.dumps(refs, separators=(",", ":")).encode())


def combine_virtual(
    paths: Sequence[str | os.PathLike[str]],
    *,
    concat_dim: str | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    **options: Any,
) -> xr.Dataset:
    """One virtual dataset from several files: one file as is, several combined by coordinates
    (or concatenated along ``concat_dim``), as ``open_virtual_mfdataset`` does."""
    datasets = [open_virtual_dataset(p, **options) for p in (paths if progress is None else progress(paths))]
    if len(datasets) == 1:
        return datasets[0]
    check_combinable(paths, datasets, concat_dim)
    if concat_dim is not None:
        try:
            return xr.combine_nested(
                datasets,
                concat_dim=concat_dim,
                data_vars="all",
                coords="different",
                compat="equals",
                combine_attrs="override",
            )
        except (TypeError, NotImplementedError) as exc:  # a virtual array xarray would have to copy or expand
            reason = " ".join(str(exc).split()).rstrip(".")
            raise XarrayTensogramError(
                f"cannot concatenate {len(datasets)} files along {concat_dim!r} without copying their data: "
                f"{reason}. {concat_dim!r} must be a dimension of each file, or a scalar coordinate computed "
                "from its metadata (a coordinate stored as data cannot become a dimension)"
            ) from exc
    combined = xr.combine_by_coords(
        datasets, data_vars="minimal", coords="minimal", compat="override", combine_attrs="override"
    )
    assert isinstance(combined, xr.Dataset)  # Datasets in, a Dataset out
    return combined
