"""Command line: ``xarray-tensogram`` / ``python -m xarray_tensogram`` (``docs/cli.md``).

Without arguments: open every bundled sample with xarray and print what it holds. The subcommands ``info``,
``ls``, ``dump``, ``verify`` and ``refs`` take a path or fsspec URL. Errors are one line (``--debug``: traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from xarray.backends.common import datatree_from_dict_with_io_cleanup

from ._version import __version__
from .cli_dump import CliError, cmd_dump
from .errors import MissingCodecError, NotATensorFileError, describe, first_line
from .formats import registry
from .formats.reports import count, shape_text
from .io import open_source
from .layout_record import LayoutRecord
from .progress import PROG, add_progress_flags, progress
from .samples import paths as sample_paths
from .virtual.cli import add_refs_command

__all__ = ["main"]

#: verify shows a progress bar (when tqdm is installed) from this many items or bytes on
PROGRESS_ITEMS = 200
PROGRESS_BYTES = 64 << 20


@contextlib.contextmanager
def _format_file(path: str, storage_options: dict[str, Any] | None, quiet: bool = False) -> Iterator[tuple[Any, Any]]:
    """The format record and the format's own file object. A file none of the formats recognises is an
    error in the file (exit status 1), not in the command line; ``quiet`` silences scan warnings (the
    command reports damage itself)."""
    with open_source(path, storage_options) as source:
        spec = registry.sniff(source)
        if spec is None:
            what = registry.other_format(source) or "unknown magic and extension"
            raise NotATensorFileError(
                f"{describe(source.name)}not a Tensogram, Tetration or zTensor file ({what}); "
                "this command reads .tgm, .tet and .zt files only"
            )
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        f = registry.open_file(spec, path, storage_options=storage_options)
    with f:
        yield spec, f


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right: Sequence[int] = ()) -> None:
    """Print an aligned table: numeric columns (indices in ``right``) right-aligned."""
    rows = [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    for r in [headers, ["-" * w for w in widths], *rows]:
        cells = enumerate(zip(r, widths, strict=False))
        print("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in cells).rstrip())


@contextlib.contextmanager
def _decoded(path: str, storage_options: dict[str, Any] | None) -> Iterator[tuple[dict[str, Any], Any]]:
    """Every group of the file decoded (a file of groups: a root and each) and the opened file with its
    format record, all closed on the way out."""
    from .backend import open_decoded

    datasets, opened = open_decoded(path, storage_options=storage_options or None)
    try:
        yield datasets, opened
    finally:
        for ds in datasets.values():
            ds.close()


def cmd_info(path: str, storage_options: dict[str, Any] | None = None, sample: bool = False) -> None:
    """The format's own summary, then xarray's, from one open of the file; for a ``sample`` (the main job)
    also the variables table and each numeric variable's range."""
    with _decoded(path, storage_options) as (datasets, opened):
        size = opened.file.source.size
        print(f"file:     {path}", *opened.spec.info(opened.file), sep="\n")
        nbytes = sum(ds.nbytes for ds in datasets.values())  # a file of groups: its root holds no variable
        sizes = f"sizes:    {size} bytes in the file ({_human(size)}), {nbytes} bytes decoded ({_human(nbytes)})"
        ds = datasets["/"]
        if len(datasets) > 1:
            print(sizes, datatree_from_dict_with_io_cleanup(datasets), sep="\n")
        else:
            print(
                f"{sizes}, {count(len(ds.data_vars), 'data variable')} in "
                f"{count(sum(_n_chunks(v) or 0 for v in ds.data_vars.values()), 'Dask chunk')} with chunks={{}} "
                "(as 'ls' counts them; coordinates not counted)"
            )
            print(ds)
        if sample:
            print()
            _variables_table(datasets)
            for name, var in ds.data_vars.items():
                values = var.values
                if values.dtype.kind in "fiu" and values.size:
                    mean = values.astype("f8").mean()
                    print(f"  {name}: min {values.min():.6g}, max {values.max():.6g}, mean {mean:.6g}")


def _n_chunks(var: Any) -> int | None:
    """How many Dask chunks ``chunks={}`` gives one variable (its storage units), None without preferred chunks."""
    chunks = var.encoding.get("preferred_chunks")
    if not chunks:
        return None
    return math.prod(-(-int(n) // max(1, int(chunks.get(d, n)))) if n else 0 for d, n in var.sizes.items())


def cmd_ls(args: argparse.Namespace) -> None:
    with _format_file(args.file, args.storage_options) as (spec, f):
        tables = spec.ls(f, args.tiles)
    for i, t in enumerate(tables):
        if i:
            print()
        _table(t.headers, t.rows, right=t.right)
        if t.summary:
            print(f"\n{t.summary}")
    print()
    with _decoded(args.file, args.storage_options) as (datasets, _):
        _variables_table(datasets)


def _dims_origin(var: Any) -> str:
    """Where a variable's dims and name come from, from what the backend records in ``encoding``."""
    enc = var.encoding
    record = LayoutRecord.of(enc, var.name)
    parts = [f"{d} <- {key}" for keys in (record.message_keys, record.scalar_keys) for d, key in (keys or {}).items()]
    if record.name_key:
        parts.append(f"name <- {record.name_key}")
    if "tetr_chunk_shape" in enc:
        parts.append(f"tiles {shape_text(enc['tetr_chunk_shape'])} ({enc.get('tetr_codec', '?')})")
    if "ztensor_encoding" in enc:
        parts.append(f"one tensor ({enc['ztensor_encoding']}, {enc.get('ztensor_layout', '?')})")
    return ", ".join(parts) or "-"


def _variable_rows(ds: Any, group: str = "") -> list[list[Any]]:
    """One row per data variable: dims with sizes, the storage chunk and the number of chunks."""
    rows = []
    for name, var in ds.data_vars.items():
        chunks = var.encoding.get("preferred_chunks") or {}
        chunk = shape_text([int(chunks.get(d, n)) for d, n in var.sizes.items()]) if chunks else "-"
        dims = ", ".join(f"{d}: {n}" for d, n in var.sizes.items()) or "scalar"
        n_chunks = _n_chunks(var)
        row = [name, dims, str(var.dtype), chunk, "-" if n_chunks is None else n_chunks, _dims_origin(var)]
        rows.append([group, *row] if group else row)
    return rows


def _variables_table(datasets: dict[str, Any]) -> None:
    """The Dataset view: each variable's dims, Dask chunk with ``chunks={}``, chunk count, dims' origin."""
    grouped = len(datasets) > 1
    rows = [row for group, ds in datasets.items() for row in _variable_rows(ds, group if grouped else "")]
    headers = ["variable", "dims", "dtype", "chunk", "chunks", "from"]
    print("as xarray opens it (the Dask chunk with chunks={}: one storage unit):")
    _table((["group"] if grouped else []) + headers, rows, right=(5,) if grouped else (4,))


def cmd_verify(args: argparse.Namespace) -> int:
    """Exit status 1 on damage; items skipped for a missing codec package fail only with ``--strict``."""
    path = args.file
    hashed: Counter[bool | None] = Counter()  # items whose hash was verified (True), that store none (False)
    skipped: list[str] = []  # items not decodable here because an optional codec is missing: not damage
    with _format_file(path, args.storage_options, quiet=True) as (spec, f):
        plan = spec.verify(f)
        failures = list(plan.failures)
        # a format's check marks whether the stored hash was verified before a codec was found missing
        unknown = "checksum not checked" if plan.checksums else "the format stores no checksum"
        notes = {True: "xxh3 hash verified", False: "no stored hash", None: unknown}
        large = len(plan.items) >= PROGRESS_ITEMS or plan.total_bytes >= PROGRESS_BYTES
        for item, check in progress(plan.items, args.progress, large, "verify", "obj"):
            try:
                hashed[bool(check())] += 1
            except MissingCodecError as exc:
                hashed[exc.hash_verified] += 1
                skipped.append(f"SKIP {item}: {notes[exc.hash_verified]}; not decoded: {_one_line(exc)}")
            except Exception as exc:  # every failure is reported per item
                failures.append(f"FAIL {item}: {type(exc).__name__}: {first_line(exc)}")
    for line in failures + skipped:
        print(line)
    decoded = hashed.total() - len(skipped)
    if not plan.checksums:
        detail = f"{count(decoded, plan.unit)} decoded; the format stores no checksums"
    else:
        detail = f"{count(hashed[True], 'hash', 'hashes')} verified, {count(decoded, 'item')} decoded"
        if hashed[False]:
            detail += f", {hashed[False]} without a stored hash"
    if skipped:
        detail += f", {count(len(skipped), 'item')} skipped (optional codec package missing)"
    problems = len(failures) + (len(skipped) if args.strict else 0)
    if problems:
        print(f"{path}: FAILED: {count(problems, 'problem')} ({plan.summary}; {detail})")
        return 1
    print(f"{path}: OK ({spec.title}: {plan.summary}; {detail})")
    return 0


def main_job() -> None:
    """Open each bundled sample with xarray and show what it holds."""
    for path in sample_paths():
        print("=" * 78)
        cmd_info(path, sample=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect, dump and verify Tensogram (.tgm), Tetration (.tet) and zTensor (.zt) files. "
        "Without a command: open every bundled sample and show what it holds.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.set_defaults(run=lambda _: main_job())
    sub = parser.add_subparsers(metavar="COMMAND")

    def add(name: str, help_: str, run: Callable[[argparse.Namespace], int | None]) -> argparse.ArgumentParser:
        """A subcommand taking FILE and --storage-options, run by ``run(args)``."""
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(run=run)
        p.add_argument("file", metavar="FILE", help="path or fsspec URL (s3://, https://, simplecache::...)")
        p.add_argument(
            "--storage-options",
            metavar="JSON",
            type=_json_options,
            help="fsspec storage_options for a URL, as JSON, e.g. '{\"anon\": true}'",
        )
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")
        return p

    add("info", "Dataset summary with format, version and sizes", lambda a: cmd_info(a.file, a.storage_options))
    p = add("ls", "one row per message/object, dataset (tile grid) or tensor", cmd_ls)
    p.add_argument("--tiles", action="store_true", help="Tetration: also list every tile")
    p = add("dump", "values of one variable, optionally a selection", cmd_dump)
    p.add_argument("variable", metavar="VAR")
    for flag, metavar, help_ in (
        ("--isel", "DIM=SEL", "positional selection: DIM=I, DIM=A:B[:STEP] or DIM=I,J,K (repeatable)"),
        (
            "--sel",
            "DIM=LABEL",
            "selection by coordinate label: DIM=LABEL or DIM=L1,L2 (repeatable); nearest label "
            "for float coordinates, exact otherwise (dates 2024-01-01T06, time deltas 6h)",
        ),
    ):
        p.add_argument(flag, action="append", default=[], metavar=metavar, help=help_)
    p.add_argument("--group", default=None, help="group of a Tensogram file with several grids")
    p.add_argument("--full", action="store_true", help="print every value (no '...' summary)")
    p = add("verify", "check every hash/checksum and decode every object, tile or tensor", cmd_verify)
    add_progress_flags(p, "a bar is shown for large files on a terminal only")
    p.add_argument(
        "--strict",
        action="store_true",
        help="also fail (exit 1) when an item is skipped because an optional codec package is missing",
    )
    add_refs_command(sub, _json_options)
    return parser


def _json_options(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and type(exc).__module__ == "builtins":
        # "[Errno 2] No such file or directory: 'x.tgm'" -> "'x.tgm': No such file or directory"
        where = f"{exc.filename!r}: " if exc.filename is not None else ""
        return f"{where}{exc.strerror}"
    text = _one_line(exc) or type(exc).__name__
    if isinstance(exc, (CliError, OSError)) or type(exc).__module__.startswith("xarray_tensogram"):
        return text
    return f"{type(exc).__name__}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``): without arguments the main job on the bundled
    samples, else ``info``, ``ls``, ``dump``, ``verify`` or ``refs`` (kerchunk references, the ``virtual`` extra).

    Returns the exit status (``docs/cli.md``): 0 success; 1 a problem with a file or the environment (a
    failed ``verify``, a missing optional package); 2 a usage error (an unknown option, variable, dimension
    or label); 130 interrupted. ``--version`` and ``--help`` exit through ``SystemExit``.
    """
    args = _parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    try:
        with warnings.catch_warnings():  # restores showwarning on the way out
            warnings.simplefilter("default")
            warnings.showwarning = lambda message, *_, **__: print(f"{PROG}: warning: {message}", file=sys.stderr)
            status = args.run(args) or 0
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `xarray-tensogram ls big.tgm | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line per error
        if debug:
            raise
        print(f"{PROG}: error: {_error_line(exc)}", file=sys.stderr)
        return exc.status if isinstance(exc, CliError) else 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
