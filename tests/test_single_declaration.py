"""Each concept is declared once: checked from the package's source (issue 26).

Codecs: each compressor's name appears as a string only in its codec module, the codec registry, and each
format's one table from its file vocabulary to codec objects; every codec object is registered; and
CONTRIBUTING's "Adding a codec" steps name files and objects that exist.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from xarray_tensogram.codecs import blosc2
from xarray_tensogram.codecs.base import PASSTHROUGH, Codec
from xarray_tensogram.codecs.registry import CODECS
from xarray_tensogram.formats.tensogram.compression import MASK_METHODS, STAGES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "xarray_tensogram"

#: the compressors: what a Tensogram descriptor may name as compression or mask method (every other
#: format's compressors are among them)
COMPRESSORS = {c.name for c in (*STAGES["compression"].values(), *MASK_METHODS.values()) if c is not PASSTHROUGH}
#: each format's one table from its file vocabulary to codec objects, and the registry
TABLES = {
    "codecs/registry.py",
    "formats/tensogram/compression.py",
    "formats/tetr/model.py",
    "formats/ztensor/compression.py",
}


def _module_file(codec: Codec) -> str:
    return type(codec).__module__.removeprefix("xarray_tensogram.").replace(".", "/") + ".py"


def _string_constants(source: str) -> list[tuple[int, str]]:
    """String literals of a module, docstrings left out (prose may name a codec)."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_scan_knows_the_compressors() -> None:
    assert {"zstd", "lz4", "szip", "blosc2", "zfp", "sz3", "rle", "roaring"} <= COMPRESSORS


def test_each_compressor_name_is_written_in_its_module_the_registry_and_the_format_tables() -> None:
    home = {c.name: _module_file(c) for c in CODECS.values()}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, value in _string_constants(path.read_text()):
            if value not in COMPRESSORS or rel in TABLES or rel == home[value]:
                continue
            if rel == home[blosc2.CODEC.name] and value in blosc2.INNER_CODECS:
                continue  # blosc2's own vocabulary: the compressors inside a blosc2 frame
            found.append(f"{rel}:{line} {value!r}")
    assert not found, "compressor names outside their codec module, the registry and the format tables: " + str(found)


def test_every_codec_object_is_registered_once() -> None:
    """A codec module's objects are in the registry (adding one is its module plus one registration line)."""
    defined = []
    for path in sorted((PACKAGE / "codecs").glob("*.py")):
        module = importlib.import_module(f"xarray_tensogram.codecs.{path.stem}")
        defined += [v for v in vars(module).values() if isinstance(v, Codec) and type(v).__module__ == module.__name__]
    assert {id(c) for c in defined} == {id(c) for c in CODECS.values()}
    assert len(CODECS) == len(defined)


def test_codec_objects_declare_what_they_can_do() -> None:
    """Typed capabilities, not probes: a codec that claims decode_into or prefix decode overrides it."""
    for codec in CODECS.values():
        for capability, method in (("decode_into", "decode_into"), ("prefix_decode", "decode_prefix")):
            overridden = getattr(type(codec), method) is not getattr(Codec, method)
            claimed = getattr(codec.capabilities, capability)
            assert claimed == overridden or codec is PASSTHROUGH, (codec.name, capability)
        for p in codec.params:
            assert p.default is None or p.problem(p.default) is None, (codec.name, p.name)


def _section(title: str) -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"CONTRIBUTING.md has no section {title!r}"
    return match.group(1)


def test_contributing_adding_a_codec_names_steps_that_exist() -> None:
    """Each ``path`` (``name``) the section names exists, and the steps are at most two: the new module and the
    registration line (everything else it names is read, or is a format's business)."""
    section = _section("Adding a codec")
    steps = re.findall(r"`(xarray_tensogram/[\w/]+\.py)` \(`(\w+)`\)", section)
    assert steps, "the section names no file and object"
    for path, name in steps:
        assert (ROOT / path).is_file(), path
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert hasattr(module, name), f"{path} defines no {name}"
    numbered = re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |^$)", section, re.S | re.M)
    assert [n for n, _ in numbered] == ["1", "2"], numbered
    assert "`xarray_tensogram/codecs/<name>.py`" in numbered[0][1]
    assert "`xarray_tensogram/codecs/registry.py` (`_REGISTERED`)" in numbered[1][1]
