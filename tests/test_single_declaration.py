"""Each concept is declared once: checked from the package's source (issue 26).

Codecs: each compressor's name appears as a string only in its codec module, the codec registry, and each
format's one table from its file vocabulary to codec objects; every codec object is registered; and
CONTRIBUTING's "Adding a codec" steps name files and objects that exist.

Open options and formats: every open option's default is written only in ``options.py``; each format's
name appears as a string only in that format's own modules (its folders under ``formats/`` and
``assemble/``, its writer) and the registration; the README's kwargs table lists exactly the declared
options and says which formats take the format-specific ones, as the format records do; the backend's
signature is the declaration; CONTRIBUTING's "Adding a format" and "Adding an open option" steps exist.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from xarray_tensogram import options
from xarray_tensogram.assemble.registry import options_taken
from xarray_tensogram.backend import TensogramBackendEntrypoint
from xarray_tensogram.codecs import blosc2
from xarray_tensogram.codecs.base import PASSTHROUGH, Codec
from xarray_tensogram.codecs.registry import CODECS
from xarray_tensogram.formats import registry
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


# -- open options and formats ----------------------------------------------------------------------
SOURCES = sorted(PACKAGE.rglob("*.py"))

#: (module path, parameter) pairs whose default is another concept of the same name, each with its reason
NOT_THE_OPEN_OPTION = {
    # ``xarray-tensogram verify --strict``: fail on items skipped for a missing codec package
    ("cli.py", "strict"),
    # formats/ is a library of its own (DESIGN.md): its read methods' switches default to off
    ("formats/tensogram/objects.py", "verify_hash"),
    ("formats/tensogram/reader.py", "strict"),
    ("formats/tensogram/scan.py", "strict"),
}


def _named_values(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """``(name, value)`` pairs a node binds: parameter defaults, keyword arguments, dict entries,
    ``.get(name, value)`` fallbacks and annotated assignments (dataclass fields)."""
    out: list[tuple[str, ast.AST]] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        positional = a.posonlyargs + a.args
        out += [(p.arg, d) for p, d in zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)]
        out += [(p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "zip":  # zip(strict=...) is not the option
            return out
        out += [(k.arg, k.value) for k in node.keywords if k.arg]
        fallback = isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop", "setdefault")
        if fallback and len(node.args) == 2 and isinstance(node.args[0], ast.Constant):
            out.append((str(node.args[0].value), node.args[1]))
    elif isinstance(node, ast.Dict):
        out += [(str(k.value), v) for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)]
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        out.append((node.target.id, node.value))
    return out


def _default_writes(source: str) -> list[tuple[int, str]]:
    """Where ``source`` writes a declared option's default as a literal (None, "not given", aside)."""
    defaults = {o.name: o.default for o in options.OPTIONS if o.default is not None}
    hits = []
    for node in ast.walk(ast.parse(source)):
        for name, value in _named_values(node):
            literal = isinstance(value, ast.Constant) and type(value.value) is type(defaults.get(name))
            if literal and name in defaults and value.value == defaults[name]:
                hits.append((getattr(node, "lineno", 0), name))
    return hits


def test_each_open_option_default_is_written_once() -> None:
    found = []
    for path in SOURCES:
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "options.py":
            continue
        found += [
            f"{rel}:{line} {name}"
            for line, name in _default_writes(path.read_text())
            if (rel, name) not in NOT_THE_OPEN_OPTION
        ]
    assert found == []


def test_the_default_scan_finds_a_second_default() -> None:
    """The scanner itself: the ways a default used to be repeated are all seen."""
    source = (
        "def f(range_threshold: float = 0.5, *, merge_objects=True): pass\n"
        "g(verify_hash=False)\n"
        "o.get('range_threshold', 0.5)\n"
        "x = {'strict': False}\n"
        "zip(a, b, strict=False)\n"
    )
    names = sorted(name for _, name in _default_writes(source))
    assert names == ["merge_objects", "range_threshold", "range_threshold", "strict", "verify_hash"]


def _own_modules(name: str) -> list[str]:
    """The relative paths (prefixes) where format ``name`` may be written as a string: its own folders
    and modules in every layer (``formats/<name>/``, ``assemble/<name>``, ``write/<name>``)."""
    return [f"{layer}/{name}/" for layer in ("formats", "assemble", "write")] + [
        f"{layer}/{name}.py" for layer in ("assemble", "write")
    ]


def test_format_names_only_in_their_own_modules_and_the_registration() -> None:
    names = set(registry.formats())
    assert names == {"tensogram", "tetr", "ztensor"}  # the scan below is worth something only if it knows them
    found = []
    for path in SOURCES:
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "formats/registry.py":
            continue
        for line, text in _string_constants(path.read_text()):
            if text in names and not any(rel.startswith(p) for p in _own_modules(text)):
                found.append(f"{rel}:{line} {text!r}")
    assert found == []


def _defined(ref: str) -> bool:
    """Whether ``"module:name"`` names a function or class of the package, read from the source (the
    virtual modules need the 'virtual' extra to import)."""
    module, _, name = ref.partition(":")
    path = ROOT / (module.replace(".", "/") + ".py")
    return path.exists() and re.search(rf"^(def|class) {name}\b", path.read_text(), re.M) is not None


def test_every_record_names_existing_entries() -> None:
    for spec in registry.formats().values():
        for ref in (spec.assembler, spec.writer):
            assert callable(registry.load(ref)), ref
        assert _defined(spec.virtual_parser), spec.virtual_parser
        assert spec.virtual_parser.startswith("xarray_tensogram.virtual.")


# -- the README's kwargs table ------------------------------------------------------------------------
def _kwargs_section() -> str:
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index("<!-- --8<-- [start:kwargs] -->"), readme.index("<!-- --8<-- [end:kwargs] -->")
    return readme[start:end]


def test_the_readme_kwargs_table_lists_exactly_the_declared_options() -> None:
    rows = [line for line in _kwargs_section().splitlines() if line.startswith("| `")]
    listed = [name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])]
    assert sorted(listed) == sorted(options.names())
    assert len(listed) == len(set(listed))


def _formats_taking(name: str) -> set[str]:
    return {spec.title.split()[0] for spec in registry.formats().values() if name in options_taken(spec)}


def test_the_readme_says_which_formats_take_each_format_option() -> None:
    """Each format-specific option is said to apply to exactly the formats whose reader or assembly takes it."""
    text = " ".join(_kwargs_section().split())
    sentences = re.split(r"(?<=[.:;])\s", text)
    titles = {spec.title.split()[0] for spec in registry.formats().values()}
    for name in options.names(options.Scope.FORMAT):
        taking = _formats_taking(name)
        assert taking and taking != titles, name  # format-specific: some formats take it, not all
        said = [s for s in sentences if f"`{name}`" in s and "apply to" in s]
        assert said, f"the README does not say which formats take {name!r}"
        for sentence in said:
            clause = sentence[sentence.rindex(f"`{name}`") :]
            clause = clause[: clause.index(" files")]  # "`x` to Tensogram and zTensor files", "... Tensogram files"
            assert {t for t in titles if t in clause} == taking, (name, clause)


# -- the backend signature ----------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["open_dataset", "open_groups_as_dict", "open_datatree"])
def test_the_backend_methods_present_the_declared_signature(method: str) -> None:
    params = inspect.signature(getattr(TensogramBackendEntrypoint, method)).parameters
    assert list(params) == ["self", "filename_or_obj", *options.names()]
    assert {n: p.default for n, p in params.items() if n in options.names()} == {
        o.name: o.default for o in options.OPTIONS
    }
    assert TensogramBackendEntrypoint.open_dataset_parameters == ("filename_or_obj", *options.names())


def test_xarray_derives_the_same_parameters_from_the_signature() -> None:
    from xarray.backends.plugins import detect_parameters

    assert (
        detect_parameters(TensogramBackendEntrypoint.open_dataset) == TensogramBackendEntrypoint.open_dataset_parameters
    )


# -- CONTRIBUTING's "where to add things" ---------------------------------------------------------------
def _contributing_section(title: str) -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return " ".join(text[start : end if end > 0 else None].split())


@pytest.mark.parametrize("title", ["Adding a format", "Adding an open option", "Adding a producer"])
def test_the_steps_contributing_names_exist(title: str) -> None:
    section = _contributing_section(title)
    paths = re.findall(r"`((?:xarray_tensogram|tests)/[^`]+)`", section)
    assert paths
    for path in paths:
        for name in registry.formats() if "<name>" in path else [""]:
            concrete = path.replace("<name>", name)
            if "<name>" in path and concrete.startswith("tests/data/"):
                continue  # fixtures folders are per format where a format has reference files
            assert (ROOT / concrete).exists(), concrete
    pairs = re.findall(r"`(\w+)` (?:in|of) `(xarray_tensogram/[^`<]+\.py)`", section)
    assert pairs
    for symbol, path in pairs:
        source = (ROOT / path).read_text()
        assert re.search(rf"^\s*(def|class) {symbol}\b|^{symbol}\b.*=", source, re.M), (symbol, path)


def test_the_format_steps_are_what_the_records_hold() -> None:
    """The record fields CONTRIBUTING names are the record's fields, and each format's entries live in
    modules of its own or in the shared virtual modules."""
    section = _contributing_section("Adding a format")
    fields = {f for f in re.findall(r"`(\w+)`", section) if f in registry.FormatSpec.__dataclass_fields__}
    assert {"assembler", "writer", "virtual_parser", "open"} <= fields
    for name, spec in registry.formats().items():
        assert f".assemble.{name}" in spec.assembler and f".write.{name}" in spec.writer


def test_each_parser_finds_its_format_from_the_record() -> None:
    pytest.importorskip("numcodecs", reason="the virtual parsers need the 'virtual' extra")
    for spec in registry.formats().values():
        assert registry.load(spec.virtual_parser).format() is spec


def test_options_py_sits_at_the_bottom() -> None:
    tree = ast.parse((PACKAGE / "options.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
    assert imported <= {"errors"}


def test_contributing_install_line_is_the_command_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("<!-- test-command -->") : readme.index("<!-- /test-command -->")]
    command = next(line for line in block.splitlines() if line.startswith("pip install"))
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert command in contributing
