"""``xarray-tensogram refs FILE... -o refs.json|refs.parquet``: kerchunk references for one or many files."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from ..progress import add_progress_flags

__all__ = ["add_refs_command", "cmd_refs"]


def add_refs_command(sub: Any, json_options: Any) -> None:
    """Register the ``refs`` subcommand on the CLI's subparsers."""
    help_ = "write kerchunk references (JSON or Parquet) so that Zarr readers open the files without copying"
    p = sub.add_parser("refs", help=help_, description=help_ + ". Needs the 'virtual' extra.")
    p.add_argument("files", metavar="FILE", nargs="+", help="paths or URLs (http(s)://, s3://) of .tgm/.tet/.zt files")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="refs.json, or refs.parquet (a directory) for many chunks"
    )
    p.add_argument(
        "--concat-dim",
        default=None,
        metavar="DIM",
        help="concatenate the files along DIM in the given order (default: combine by coordinates)",
    )
    p.add_argument("--group", default=None, help="group of a Tensogram file with several grids")
    p.add_argument(
        "--storage-options",
        metavar="JSON",
        type=json_options,
        default=None,
        help="fsspec storage_options for URLs, as JSON (s3: key, secret, anon, client_kwargs.endpoint_url)",
    )
    add_progress_flags(p, "a bar is shown for several files on a terminal only")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")


def cmd_refs(
    files: Sequence[str],
    output: str,
    *,
    concat_dim: str | None = None,
    group: str | None = None,
    storage_options: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> None:
    """Build one virtual dataset from ``files`` and write its kerchunk references to ``output``."""
    from ..progress import progress as bar
    from .refs import combine_virtual, write_refs

    def each(items: Iterable[Any]) -> Iterable[Any]:  # a bar on a terminal for several files (the CLI's rule)
        return bar(list(items), progress, len(files) >= 2, "refs", "file")

    options: dict[str, Any] = {}
    if group is not None:
        options["group"] = group
    if storage_options:
        options["storage_options"] = storage_options
    with warnings.catch_warnings():
        # noise from the libraries underneath, not about the user's files
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        warnings.filterwarnings("ignore", message=".*fastparquet.*")
        warnings.filterwarnings("ignore", message=".*future.infer_string.*")
        vds = combine_virtual(list(files), concat_dim=concat_dim, progress=each, **options)
        write_refs(vds, output)
    print(f"{output}: {len(vds.data_vars)} variables, {len(files)} file{'s' if len(files) != 1 else ''}")
