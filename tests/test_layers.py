"""The package's layers, checked from the source: imports only go down, and there are no cycles.

Imports are read with ``ast`` from every module, function-local ones included
(a local import hides a cycle from Python but not from this test).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "xarray_tensogram"
ROOT = Path(__file__).parent.parent / PACKAGE


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute names a ``from ... import`` pulls in (the module and, when they are modules, its names)."""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{alias.name}" for alias in node.names]


def _graph() -> dict[str, set[str]]:
    """module -> package modules it imports (anywhere in its body)."""
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = _resolve(module, path.name == "__init__.py", node)
            else:
                continue
            # a module's own parent packages are initialised before it by Python: not an edge
            edges.update(n for n in names if n in files and n != module and not module.startswith(n + "."))
        graph[module] = edges
    return graph


GRAPH = _graph()


def _in(module: str, layer: str) -> bool:
    return module == f"{PACKAGE}.{layer}" or module.startswith(f"{PACKAGE}.{layer}.")


#: the layers above the lazy array, top to bottom below the command line (DESIGN.md's layer map)
ABOVE_ARRAY = ("backend", "cli", "assemble", "write", "producers", "raw_variables", "dim_names")


def _edges(src_layer: str, *dst_layers: str) -> list[str]:
    return sorted(
        f"{a} -> {b}" for a, bs in GRAPH.items() if _in(a, src_layer) for b in bs if any(_in(b, d) for d in dst_layers)
    )


def test_the_graph_sees_local_and_relative_imports() -> None:
    # backend.py imports the format registry at module level; cli.py imports the backend inside functions
    assert f"{PACKAGE}.formats.registry" in GRAPH[f"{PACKAGE}.backend"]
    assert f"{PACKAGE}.backend" in GRAPH[f"{PACKAGE}.cli"]


def test_codecs_do_not_import_formats_or_anything_above() -> None:
    assert _edges("codecs", "formats", "outer", "array_spec", "byte_layout", "array", *ABOVE_ARRAY) == []


def test_the_indexer_and_the_lazy_spec_sit_below_the_formats() -> None:
    # formats use read_outer, ArraySpec and ByteLayout, so none may import a format, xarray's array or anything above
    assert _edges("outer", "formats", "array", *ABOVE_ARRAY) == []
    assert _edges("array_spec", "formats", "outer", "array", *ABOVE_ARRAY) == []
    assert _edges("byte_layout", "array_spec", "formats", "outer", "array", *ABOVE_ARRAY) == []


def test_formats_do_not_import_upper_layers() -> None:
    assert _edges("formats", "array", *ABOVE_ARRAY) == []


def test_io_and_errors_import_nothing_above_them() -> None:
    assert _edges("io", "codecs", "formats", "array", *ABOVE_ARRAY) == []
    assert sorted(GRAPH[f"{PACKAGE}.errors"]) == []


def test_assemble_and_writers_do_not_import_the_backend_or_cli() -> None:
    assert _edges("assemble", "backend", "cli", "write") == []
    assert _edges("write", "backend", "cli") == []
    assert _edges("write", "assemble") == []


def test_producers_sit_below_assembly_and_the_writers() -> None:
    """assemble/ and write/ both ask producers/ (DESIGN.md's layer map); producers ask neither, and the raw
    variables they build from sit below them."""
    assert _edges("producers", "assemble", "write", "backend", "cli") == []
    assert _edges("raw_variables", "producers", "assemble", "write", "backend", "cli") == []
    assert _edges("dim_names", "producers", "assemble", "write", "backend", "cli") == []
    assert f"{PACKAGE}.producers" in GRAPH[f"{PACKAGE}.assemble.tensogram.collect"]  # the finder sees the edge


def test_assembly_and_the_writers_name_no_producer() -> None:
    """The mapping stages and the writers ask the producers through the interface and the registry only: no
    producer's own module (its read mapping, its write layout) is imported there (DESIGN.md's layer map)."""
    shared = {f"{PACKAGE}.producers", f"{PACKAGE}.producers.interface", f"{PACKAGE}.producers.keys"}
    asking = _edges("assemble", "producers") + _edges("write", "producers")
    assert asking  # the stages and the writer do ask
    assert [e for e in asking if e.split(" -> ")[1] not in shared] == []
    producers = ("producers.grib_converter", "producers.netcdf_converter", "producers.anemoi", "producers.earthkit")
    assert _edges("producers.interface", *producers) == []


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_the_cycle_finder_finds_a_local_import_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker itself: a two-module loop added to the graph is reported."""
    a, b = f"{PACKAGE}.io.base", f"{PACKAGE}.errors"
    monkeypatch.setitem(GRAPH, b, GRAPH[b] | {a})
    assert sorted([a, b]) in _cycles()


def _reader_classes() -> set[str]:
    """``module.Class`` of every class under ``formats/`` with a ``read_chunk`` method (the chunk readers)."""
    found = set()
    for path in (ROOT / "formats").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(f, ast.FunctionDef) and f.name == "read_chunk" for f in node.body
            ):
                found.add(f"{_module_name(path)}.{node.name}")
    return found


def test_the_virtual_layer_imports_no_format_reader() -> None:
    """The virtual parsers ask a spec's reader for its byte layout (``byte_layout.ByteRangeReader``) and find a
    format through its record: no reader class of any format is imported there, and the planner knows no
    format at all."""
    readers = _reader_classes()
    assert f"{PACKAGE}.formats.tetr.reader.TetrTileReader" in readers  # the finder finds them
    imported, attributes = set(), set()
    for path in (ROOT / "virtual").glob("*.py"):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                imported.update(_resolve(module, path.name == "__init__.py", node))
            elif isinstance(node, ast.Attribute):  # `from ..formats.tetr import reader`, then `reader.Class`
                attributes.add(node.attr)
    assert f"{PACKAGE}.formats.registry" in imported
    assert sorted(imported & readers) == []
    assert sorted(r for r in readers if r.rpartition(".")[2] in attributes) == []
    assert _edges("virtual.chunks", "formats") == []
    chunks = ast.parse((ROOT / "virtual" / "chunks.py").read_text())
    checked = [n for n in ast.walk(chunks) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "isinstance"]
    assert [ast.unparse(n.args[1]) for n in checked] == ["Unreferenced"]
