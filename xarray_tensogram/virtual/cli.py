"""``xarray-tensogram refs FILE... -o refs.json|refs.parquet``: kerchunk references for one or many files."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Iterable
from typing import Any

from ..cli_dump import CliError
from ..errors import install_hint
from ..formats.reports import count
from ..progress import add_progress_flags

__all__ = ["add_refs_command", "cmd_refs"]


def add_refs_command(sub: Any, json_options: Any) -> None:
    """Register the ``refs`` subcommand on the CLI's subparsers."""
    help_ = "write kerchunk references (JSON or Parquet) so that Zarr readers open the files without copying"
    p = sub.add_parser("refs", help=help_, description=help_ + ". Needs the 'virtual' extra.")
    p.set_defaults(run=cmd_refs)
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


def cmd_refs(args: argparse.Namespace) -> None:
    """Build one virtual dataset from ``args.files`` and write its kerchunk references to ``args.output``."""
    try:
        import virtualizarr  # noqa: F401 - only: is it installed
    except ImportError as exc:
        raise CliError(f"'refs' needs the virtual extra ({exc}); {install_hint('virtual')}", status=1) from None
    from ..progress import progress as bar
    from .refs import combine_virtual, write_refs

    def each(items: Iterable[Any]) -> Iterable[Any]:  # a bar on a terminal for several files (the CLI's rule)
        return bar(list(items), args.progress, len(args.files) >= 2, "refs", "file")

    with warnings.catch_warnings():
        # noise from the libraries underneath, not about the user's files
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        warnings.filterwarnings("ignore", message=".*fastparquet.*")
        warnings.filterwarnings("ignore", message=".*future.infer_string.*")
        vds = combine_virtual(
            list(args.files),
            concat_dim=args.concat_dim,
            progress=each,
            group=args.group,
            storage_options=args.storage_options or None,
        )
        write_refs(vds, args.output)
    print(f"{args.output}: {len(vds.data_vars)} variables, {count(len(args.files), 'file')}")
