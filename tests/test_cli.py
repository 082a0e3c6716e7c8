"""The command line, run in-process through ``main(argv)`` and as a real subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from xarray_tensogram import sample_paths
from xarray_tensogram.backend import TensogramBackendEntrypoint as ENGINE
from xarray_tensogram.cli import main

pytestmark = pytest.mark.timeout(120)

SAMPLES = Path(__file__).resolve().parents[1] / "xarray_tensogram" / "samples"
TGM = SAMPLES / "forecast.tgm"
ZT = SAMPLES / "sample.zt"
TET = SAMPLES / "sample.tet"
HAS_TET = TET.exists()
needs_tet = pytest.mark.skipif(not HAS_TET, reason="no bundled sample.tet yet")


def run(*argv: str, check: int | None = 0) -> subprocess.CompletedProcess:
    """``python -m xarray_tensogram ARGV`` in a subprocess (bounded in time)."""
    proc = subprocess.run(
        [sys.executable, "-m", "xarray_tensogram", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def call(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def body_rows(out: str, header_start: str) -> list[str]:
    """The rows of the table whose header line starts with ``header_start``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        rows.append(line)
    return rows


@pytest.fixture()
def damaged_tgm(tmp_path: Path) -> Path:
    """forecast.tgm with one payload byte flipped in two objects (message 0 object 0, message 2 object 1)."""
    from xarray_tensogram import open_tensogram

    data = bytearray(TGM.read_bytes())
    with open_tensogram(TGM) as f:
        for m, j in ((0, 0), (2, 1)):
            ref = f[m].objects[j]
            data[ref.frame_offset + ref.frame_length // 2] ^= 0x5A
    path = tmp_path / "damaged.tgm"
    path.write_bytes(bytes(data))
    return path


# -- no arguments: the main job --------------------------------------------------------------------
def test_main_job_in_process(capsys):
    code, out, err = call(capsys)
    assert code == 0, err
    for path in sample_paths():
        assert path in out
    assert "2t: min" in out and "<xarray.Dataset>" in out


def test_main_job_subprocess_and_console_script():
    proc = run()
    assert "forecast.tgm" in proc.stdout and "sample.zt" in proc.stdout
    assert "Traceback" not in proc.stderr
    script = shutil.which("xarray-tensogram", path=os.path.dirname(sys.executable)) or shutil.which("xarray-tensogram")
    if script is None:
        pytest.skip("console script not installed")
    out = subprocess.run([script, "info", str(TGM)], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0 and "Tensogram, wire version 3" in out.stdout


# -- info -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, fmt",
    [
        (TGM, "Tensogram, wire version 3"),
        (ZT, "zTensor v0.1"),
        pytest.param(TET, "Tetration layout v1", marks=needs_tet),
    ],
)
def test_info(capsys, path, fmt):
    code, out, err = call(capsys, "info", path)
    assert code == 0, err
    assert f"format:   {fmt}" in out
    size = path.stat().st_size
    assert f"sizes:    {size} bytes in the file" in out
    with xr.open_dataset(path, engine=ENGINE) as ds:
        assert f"{ds.nbytes} bytes decoded" in out
        assert repr(ds).splitlines()[0] in out  # the Dataset summary xarray gives
        for name in ds.data_vars:
            assert str(name) in out


def test_info_subprocess():
    proc = run("info", TGM)
    assert "content:  4 messages, 16 objects" in proc.stdout
    assert "<xarray.Dataset>" in proc.stdout and proc.stderr == ""


# -- ls -------------------------------------------------------------------------------------------
def test_ls_tensogram(capsys):
    from xarray_tensogram import open_tensogram

    code, out, err = call(capsys, "ls", TGM)
    assert code == 0, err
    header = out.splitlines()[0].split()
    assert header[:9] == ["msg", "obj", "offset", "bytes", "name", "dtype", "shape", "pipeline", "hash"]
    assert "step" in header and "date" in header
    rows = body_rows(out, "msg")
    with open_tensogram(TGM) as f:
        expected = [(m, j) for m in f for j in range(len(m))]
        assert len(rows) == len(expected)
        for row, (m, j) in zip(rows, expected, strict=True):
            cells = row.split()
            assert int(cells[0]) == m.index and int(cells[1]) == j
            assert int(cells[2]) == m.objects[j].frame_offset and int(cells[3]) == m.objects[j].frame_length
            d = m.descriptor(j)
            assert cells[5] == d["dtype"] and cells[6] == "x".join(map(str, d["shape"]))
    assert rows[0].split()[4] == "2t" and "zstd" in rows[0] and "xxh3" in rows[0]
    assert "\n4 messages, 16 objects\n" in out  # the object table's summary, before the variables table


def test_ls_ztensor(capsys):
    from xarray_tensogram.formats.ztensor import open_ztensor

    code, out, err = call(capsys, "ls", ZT)
    assert code == 0, err
    rows = body_rows(out, "#")
    with open_ztensor(ZT) as f:
        assert [r.split()[1] for r in rows] == f.names
        assert [r.split()[3] for r in rows] == ["x".join(map(str, t.shape)) for t in f.tensors]
    assert "zTensor v0.1" in out


@needs_tet
def test_ls_tetr_with_tiles(capsys):
    from xarray_tensogram.formats.tetr import open_tetr

    code, out, err = call(capsys, "ls", TET, "--tiles")
    assert code == 0, err
    with open_tetr(TET) as f:
        rows = body_rows(out, "id")
        assert [r.split()[1] for r in rows] == f.names
        for row, d in zip(rows, f.datasets, strict=True):
            assert row.split()[5] == "x".join(map(str, d.grid))
        tiles = body_rows(out, "dataset")
        assert len(tiles) == sum(int(np.prod(d.grid)) for d in f.datasets)


# -- dump -----------------------------------------------------------------------------------------
def test_dump_point_and_slices(capsys):
    with xr.open_dataset(TGM, engine=ENGINE) as ds:
        code, out, err = call(
            capsys, "dump", TGM, "2t", "--isel", "step=2", "--isel", "latitude=4", "--isel", "longitude=3"
        )
        assert code == 0, err
        assert out.splitlines()[0] == "2t (scalar) float32"
        assert np.float32(out.splitlines()[-1]) == ds["2t"].values[2, 4, 3]
        assert "step = 0 days 12:00:00" in out

        code, out, err = call(
            capsys,
            "dump",
            TGM,
            "msl",
            "--isel",
            "step=1:3",
            "--isel",
            "latitude=0:19:6",
            "--isel",
            "longitude=5,7",
            "--full",
        )
        assert code == 0, err
        assert out.splitlines()[0] == "msl (step: 2, latitude: 4, longitude: 2) float32"
        numbers = np.array(out[out.index("[[") :].replace("[", " ").replace("]", " ").split(), dtype=np.float32)
        np.testing.assert_array_equal(numbers, ds["msl"].values[1:3, 0:19:6][:, :, [5, 7]].ravel())


def test_dump_coordinate_and_other_formats(capsys):
    code, out, err = call(capsys, "dump", TGM, "latitude", "--full")
    assert code == 0 and "90." in out and "-90." in out
    code, out, err = call(capsys, "dump", ZT, "t2m", "--isel", "latitude=0")
    assert code == 0, err
    with xr.open_dataset(ZT, engine=ENGINE) as ds:
        dim = ds["t2m"].dims[0]
        assert out.splitlines()[0].startswith("t2m (") and dim == "latitude"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["dump", TGM, "nope"], "no variable 'nope'; variables: 2t, msl"),
        (["dump", TGM, "2t", "--isel", "foo=1"], "has no dimension 'foo'"),
        (["dump", TGM, "2t", "--isel", "step=x"], "is not an integer"),
        (["dump", TGM, "2t", "--isel", "step"], "expected DIM=INDEX"),
        (["dump", TGM, "2t", "--isel", "step=99"], "out of range"),
    ],
)
def test_dump_errors_are_one_line(capsys, argv, message):
    code, _out, err = call(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("xarray-tensogram: error: ") and message in err


# -- verify ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [TGM, ZT, pytest.param(TET, marks=needs_tet)])
def test_verify_ok(capsys, path):
    code, out, err = call(capsys, "verify", path)
    assert code == 0, out + err
    assert out.strip().startswith(f"{path}: OK")
    assert "FAIL" not in out


def test_verify_counts_hashes(capsys):
    _code, out, _ = call(capsys, "verify", TGM)
    assert "16 hashes verified, 16 items decoded" in out


def test_verify_damaged_tensogram(capsys, damaged_tgm):
    code, out, _err = call(capsys, "verify", damaged_tgm)
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 2  # one line per damaged object
    assert fails[0].startswith("FAIL message 0, object 0: IntegrityError:") and "xxh3 mismatch" in fails[0]
    assert fails[1].startswith("FAIL message 2, object 1: IntegrityError:")
    assert "FAILED: 2 problems" in out and "14 hashes verified" in out


def test_verify_damaged_subprocess(damaged_tgm):
    proc = run("verify", damaged_tgm, check=1)
    assert proc.stdout.count("FAIL message") == 2 and "Traceback" not in proc.stderr


def test_verify_skipped_message(capsys, tmp_path):
    """A message whose framing is broken is reported (the others are still verified)."""
    from xarray_tensogram import open_tensogram

    data = bytearray(TGM.read_bytes())
    with open_tensogram(TGM) as f:
        end = f[1].offset + f[1].length
    data[end - 8 : end] = b"XXXXXXXX"  # end magic of message 1
    path = tmp_path / "broken.tgm"
    path.write_bytes(bytes(data))
    code, out, _err = call(capsys, "verify", path)
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and f"FAIL bytes {f[1].offset}.." in fails[0] and "skipped: " in fails[0]
    assert "message 1" in fails[0] and "end magic" in fails[0]
    assert "3 messages, 12 objects" in out


def test_verify_damaged_ztensor(capsys, tmp_path):
    from xarray_tensogram.formats.ztensor import open_ztensor

    data = bytearray(ZT.read_bytes())
    with open_ztensor(ZT) as f:
        t = f.tensor("t2m")
        part = t.parts.get("data") or next(iter(t.parts.values()))
        data[part.offset + 5] ^= 0x01
    path = tmp_path / "damaged.zt"
    path.write_bytes(bytes(data))
    code, out, _err = call(capsys, "verify", path)
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "'t2m'" in fails[0] and "checksum" in fails[0]


@needs_tet
def test_verify_damaged_tetr(capsys, tmp_path):
    from xarray_tensogram.formats.tetr import open_tetr

    data = bytearray(TET.read_bytes())
    with open_tetr(TET) as f:
        zstd_tiles = [e for d in f.datasets for e in d.entries if int(e["codec"]) == 1]
    if not zstd_tiles:
        pytest.skip("sample.tet has no compressed tile to damage")
    e = zstd_tiles[0]
    for k in range(int(e["stored"]) // 2, int(e["stored"])):
        data[int(e["offset"]) + k] ^= 0xFF
    path = tmp_path / "damaged.tet"
    path.write_bytes(bytes(data))
    code, out, _err = call(capsys, "verify", path)
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "tile" in fails[0]


def test_verify_progress_bar(capsys):
    pytest.importorskip("tqdm")
    code, out, err = call(capsys, "verify", TGM, "--progress")
    assert code == 0 and "verify" in err and "OK" in out
    code, out, err = call(capsys, "verify", TGM, "--no-progress")
    assert code == 0 and err == ""


# -- errors ---------------------------------------------------------------------------------------
def test_errors_are_one_line_without_traceback(tmp_path, capsys):
    missing = tmp_path / "missing.tgm"
    proc = run("info", missing, check=1)
    assert proc.stderr.count("\n") == 1 and "No such file" in proc.stderr and "Traceback" not in proc.stderr

    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"hello, not a tensor file" * 10)
    code, _out, err = call(capsys, "ls", junk)
    assert code == 1  # a problem with the file, not with the command line
    assert err.strip() == (
        f"xarray-tensogram: error: file {str(junk)!r}: not a Tensogram, Tetration or zTensor file "
        "(unknown magic and extension); this command reads .tgm, .tet and .zt files only"
    )

    truncated = tmp_path / "truncated.tgm"
    truncated.write_bytes(TGM.read_bytes()[:40])
    for command in ("info", "ls", "dump", "verify"):
        code, _out, err = call(capsys, command, truncated, *(["2t"] if command == "dump" else []))
        assert code == 1 and err.count("\n") == 1 and err.startswith("xarray-tensogram: error: ")
        assert "truncated.tgm" in err


def test_debug_shows_traceback(tmp_path):
    proc = run("--debug", "info", tmp_path / "missing.tgm", check=None)
    assert proc.returncode != 0 and "Traceback" in proc.stderr
    with pytest.raises(FileNotFoundError):  # in-process, --debug after the command re-raises as well
        main(["info", str(tmp_path / "missing.tgm"), "--debug"])


def test_warnings_are_one_line(capsys, tmp_path):
    from xarray_tensogram import open_tensogram

    data = bytearray(TGM.read_bytes())
    with open_tensogram(TGM) as f:
        end = f[1].offset + f[1].length
    data[end - 8 : end] = b"XXXXXXXX"
    path = tmp_path / "broken.tgm"
    path.write_bytes(bytes(data))
    code, out, err = call(capsys, "info", path)
    assert code == 0
    assert "damaged:  1 damaged byte range" in out
    warning_lines = [line for line in err.splitlines() if line]
    assert warning_lines and all(line.startswith("xarray-tensogram: warning: ") for line in warning_lines)


def test_usage_errors(capsys):
    for argv, message in (
        (["frobnicate"], "invalid choice"),
        (["info", str(TGM), "--storage-options", "[1]"], "must be a JSON object"),
        (["dump", str(TGM)], "required: VAR"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2 and message in capsys.readouterr().err


# -- a URL ----------------------------------------------------------------------------------------
def test_commands_on_a_url(capsys):
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    from servers import RangeHTTPServer

    with RangeHTTPServer({"/forecast.tgm": TGM.read_bytes()}) as server:
        url = server.url("forecast.tgm")
        code, out, err = call(capsys, "ls", url, "--storage-options", '{"headers": {"X-Test": "1"}}')
        assert code == 0, err
        assert len(body_rows(out, "msg")) == 16
        code, out, err = call(capsys, "verify", url)
        assert code == 0 and "16 hashes verified" in out
        assert server.traffic.count > 0


# -- --version, progress bar only on a terminal ---------------------------------------------------
def test_version(capsys):
    import xarray_tensogram

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"xarray-tensogram {xarray_tensogram.__version__}"
    proc = run("--version")
    assert proc.stdout.strip() == f"xarray-tensogram {xarray_tensogram.__version__}"


def test_progress_bar_only_on_a_terminal(monkeypatch):
    from xarray_tensogram.progress import show_progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert not show_progress(None, large=True)  # pipe or log: no bar by default
    assert show_progress(True, large=False)  # --progress forces it
    assert not show_progress(False, large=True)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert show_progress(None, large=True)
    assert not show_progress(None, large=False)  # small work: no bar even on a terminal


def test_verify_in_a_pipe_writes_no_bar(tmp_path):
    """A file large enough for a bar, verified through a pipe: stderr stays empty."""
    from xarray_tensogram import cli

    path = tmp_path / "many.tgm"
    data = TGM.read_bytes()
    path.write_bytes(data * (cli.PROGRESS_ITEMS // 16 + 1))  # 16 objects per copy
    proc = run("verify", path)
    assert "OK" in proc.stdout and proc.stderr == ""


def test_progress_without_tqdm_says_so(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    code, out, err = call(capsys, "verify", TGM, "--progress")
    assert code == 0 and "OK" in out
    assert "--progress needs tqdm" in err
    code, out, err = call(capsys, "verify", TGM)
    assert code == 0 and err == ""


# -- dump --sel -----------------------------------------------------------------------------------
def test_dump_sel_by_label_nearest_for_floats(capsys):
    era = SAMPLES / "era_pl.tgm"
    with xr.open_dataset(era, engine=ENGINE) as ds:
        code, out, err = call(
            capsys,
            "dump",
            era,
            "t",
            "--sel",
            "level=850",
            "--sel",
            "step=12h",
            "--sel",
            "latitude=44",
            "--sel",
            "longitude=1.2",
        )
        assert code == 0, err
        assert out.splitlines()[0] == "t (scalar) float64"
        expected = ds["t"].values[2, list(ds["level"].values).index(850), 9, 0]  # 45N (nearest 44), 0E (nearest 1.2)
        assert float(out.splitlines()[-1]) == pytest.approx(float(expected), rel=1e-12)
        assert "latitude = 45.0" in out and "longitude = 0.0" in out

        code, out, err = call(
            capsys,
            "dump",
            era,
            "z",
            "--sel",
            "level=500,1000",
            "--sel",
            "step=0",
            "--isel",
            "latitude=0",
            "--isel",
            "longitude=0",
        )
        assert code == 0, err
        assert out.splitlines()[0] == "z (level: 2) float64"
        numbers = np.array(out[out.rindex("[") + 1 : out.rindex("]")].split(), dtype=float)
        levels = list(ds["level"].values)
        np.testing.assert_allclose(
            numbers, ds["z"].values[0, [levels.index(500), levels.index(1000)], 0, 0], rtol=1e-7
        )  # printed to 8 digits


@pytest.mark.parametrize(
    "argv, message",
    [
        (["dump", TGM, "2t", "--sel", "step=5h"], "no such label"),
        (["dump", TGM, "2t", "--sel", "bogus=1"], "has no dimension 'bogus'"),
        (["dump", TGM, "2t", "--sel", "step"], "expected DIM=VALUE"),
        (["dump", TGM, "2t", "--sel", "latitude=north"], "not a label of 'latitude'"),
    ],
)
def test_dump_sel_errors_are_one_line(capsys, argv, message):
    code, _out, err = call(capsys, *argv)
    assert code == 2, err
    assert err.count("\n") == 1 and message in err


# -- ls: dims and chunking ------------------------------------------------------------------------
def test_ls_shows_dims_and_chunks_like_the_reference_objects(capsys):
    tensogram = pytest.importorskip("tensogram")
    era = SAMPLES / "era_pl.tgm"
    code, out, err = call(capsys, "ls", era)
    assert code == 0, err
    rows = {r.split()[0]: r for r in body_rows(out, "variable")}
    ref = tensogram.TensogramFile.open(str(era))
    for param in ("t", "z"):
        shapes = [
            tuple(a.shape)
            for i in range(len(ref))
            for meta, (_, a) in zip(ref[i].metadata.base, ref[i].objects, strict=True)
            if meta.get("mars", {}).get("param") == param
        ]
        levels = {meta["mars"]["levelist"] for i in range(len(ref)) for meta in ref[i].metadata.base if "mars" in meta}
        cells = rows[param].split("  ")
        assert (
            f"step: {len(ref)}, level: {len(levels)}, latitude: {shapes[0][0]}, longitude: {shapes[0][1]}"
            in rows[param]
        )
        # the Dask chunk with chunks={}: one object (the reference's shape), 1 along step and level
        chunk = next(c.strip() for c in cells if c.strip().endswith(f"x{shapes[0][0]}x{shapes[0][1]}"))
        assert chunk == f"1x1x{shapes[0][0]}x{shapes[0][1]}"
        assert str(len(ref) * len(levels)) in [c.strip() for c in cells]
        assert "level <- mars.levelist" in rows[param]


def test_ls_chunks_of_tiles_and_tensors(capsys):
    from xarray_tensogram import open_tetr

    code, out, err = call(capsys, "ls", TET)  # one Dask chunk per tile
    assert code == 0, err
    rows = {r.split()[0]: r for r in body_rows(out, "variable")}
    with open_tetr(TET) as f:
        for d in f.datasets:
            n_tiles = int(np.prod(d.grid))
            assert f"{'x'.join(map(str, d.chunk_shape))}" in rows[d.name] and f" {n_tiles} " in rows[d.name] + " "
    with open_tetr(TET) as f:
        for d in f.datasets:
            cells = rows[d.name].split()  # name, "dim: n," per axis (two cells each), dtype, chunk, chunks, ...
            chunk, chunks = cells[2 * d.ndim + 2], cells[2 * d.ndim + 3]
            assert (chunk, chunks) == ("x".join(map(str, d.chunk_shape)), str(int(np.prod(d.grid))))
    code, out, err = call(capsys, "ls", ZT)
    assert code == 0, err
    assert all("one tensor" in r for r in body_rows(out, "variable"))


def test_ls_groups_of_a_file_with_two_grids(capsys, tmp_path):
    mixed = tmp_path / "mixed.tgm"
    mixed.write_bytes(TGM.read_bytes() + (SAMPLES / "era_pl.tgm").read_bytes())
    code, out, err = call(capsys, "ls", mixed)
    assert code == 0, err
    groups = {r.split()[0] for r in body_rows(out, "group")}
    assert groups == {"/grid_19x36", "/grid_37x72"}


# -- refs: progress, grids, ordering (needs the virtual extra) --------------------------------------
@pytest.fixture()
def per_step_files(tmp_path: Path) -> list[Path]:
    """forecast.tgm as one file per step, the step a scalar of each file (as a model writes them)."""
    import xarray_tensogram as xt

    paths = []
    with xr.open_dataset(TGM, engine=ENGINE) as ds:
        for i in range(ds.sizes["step"]):
            paths.append(tmp_path / f"step_{i}.tgm")
            xt.to_tensogram(ds.isel(step=i), paths[-1])
    return paths


def test_refs_in_a_pipe_writes_no_bar(per_step_files, tmp_path):
    pytest.importorskip("virtualizarr")
    proc = run("refs", *per_step_files, "-o", tmp_path / "refs.json", "--concat-dim", "step")
    assert proc.stdout.strip() == f"{tmp_path / 'refs.json'}: 2 variables, 4 files"
    assert proc.stderr == ""  # no tqdm carriage returns in a pipe


def test_refs_bar_on_a_terminal_only(per_step_files, tmp_path, capsys, monkeypatch):
    pytest.importorskip("virtualizarr")
    pytest.importorskip("tqdm")
    argv = ["refs", *per_step_files, "-o", tmp_path / "refs.json", "--concat-dim", "step"]
    code, _out, err = call(capsys, *argv)
    assert code == 0 and err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _out, err = call(capsys, *argv)
    assert code == 0 and "refs:" in err and "0/4" in err  # tqdm on stderr, over the four files
    code, _out, err = call(capsys, *argv, "--no-progress")
    assert code == 0 and err == ""


def test_refs_files_on_different_grids_say_so(capsys, tmp_path):
    pytest.importorskip("virtualizarr")
    era = SAMPLES / "era_pl.tgm"
    code, out, err = call(capsys, "refs", era, TGM, "-o", tmp_path / "refs.json")
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert "'era_pl.tgm' and 'forecast.tgm' are on different grids" in err
    assert "'latitude' has 37 values (90.0 to -90.0) in 'era_pl.tgm' and 19 values (90.0 to -90.0)" in err
    assert "write one per grid" in err and "np." not in err and "fancy indexing" not in err
    assert not (tmp_path / "refs.json").exists()


def test_refs_suggests_concat_dim_for_files_nothing_orders(per_step_files, capsys, tmp_path):
    pytest.importorskip("virtualizarr")
    code, _out, err = call(capsys, "refs", *per_step_files, "-o", tmp_path / "refs.json")
    assert code == 1 and err.count("\n") == 1, err
    assert "'step_0.tgm', 'step_1.tgm', 'step_2.tgm' ..." in err and "nothing orders them" in err
    assert "--concat-dim step" in err
    code, _out, err = call(capsys, "refs", per_step_files[0], per_step_files[0], "-o", tmp_path / "refs.json")
    assert code == 1 and "'step_0.tgm' is given more than once" in err


def test_sel_error_shows_plain_values(capsys):
    code, _out, err = call(capsys, "dump", SAMPLES / "era_pl.tgm", "t", "--sel", "level=700")
    assert code == 2 and "no such label; level has 500, 850, 1000" in err
    assert "np." not in err and "int64" not in err


# -- exit status: each documented status, from the table in docs/cli.md ----------------------------
def _documented_statuses() -> set[int]:
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = page[page.index("| status | meaning |") :]
    return {int(line.split("|")[1]) for line in table.splitlines()[2:] if line.startswith("| ")}


def _exit_status(argv: list[str], capsys: pytest.CaptureFixture) -> int:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    capsys.readouterr()
    return code


def test_exit_statuses_are_as_documented(capsys, monkeypatch, tmp_path, damaged_tgm):
    netcdf = tmp_path / "plain.nc"
    xr.Dataset({"a": ("x", np.arange(3))}).to_netcdf(netcdf, engine="h5netcdf")
    cases = {
        0: [["info", TGM], ["verify", TGM], ["dump", TGM, "2t", "--isel", "step=0"]],
        1: [["info", tmp_path / "missing.tgm"], ["info", netcdf], ["ls", netcdf], ["verify", damaged_tgm]],
        2: [
            ["frobnicate"],
            ["info", TGM, "--storage-options", "[1]"],
            ["dump", TGM, "2t", "--isel", "step"],
            ["dump", TGM, "nope"],
            ["dump", TGM, "2t", "--sel", "step=5h"],
        ],
    }
    for status, runs in cases.items():
        for argv in runs:
            assert _exit_status(argv, capsys) == status, argv
    monkeypatch.setitem(sys.modules, "virtualizarr", None)  # refs without the virtual extra: the environment
    assert _exit_status(["refs", TGM, "-o", tmp_path / "refs.json"], capsys) == 1

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("xarray_tensogram.cli.cmd_info", interrupted)
    assert _exit_status(["info", TGM], capsys) == 130
    assert {*cases, 130} == _documented_statuses()  # every documented status is exercised above
