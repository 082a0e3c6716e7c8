"""The code checks, run as tests of the suite: ruff (lint and format), ``mypy --strict``, the size limits and
a bound on complex functions (radon).

Their configuration lives in ``pyproject.toml`` ([tool.ruff], [tool.mypy]); the tools come with the
``test`` extra. Each test runs the tool from the repository root in a subprocess, with this
interpreter, and fails with the tool's own output, which names the file, the line and the rule.
mypy also gets ``--strict`` on the command line, so the configuration cannot quietly weaken it.
mypy keeps its incremental cache in ``.mypy_cache/`` (git-ignored), so a re-run checks only what changed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m <tool> ...`` in the repository root, capturing its output as text."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("ruff", "check", "--no-fix", "--output-format", "concise", "."), id="ruff-check"),
        pytest.param(("ruff", "format", "--check", "."), id="ruff-format"),
        pytest.param(("mypy", "--strict"), id="mypy-strict"),
    ],
)
def test_check_is_clean(args: tuple[str, ...]) -> None:
    """The tool exits 0; otherwise its report is the failure message."""
    done = _run(*args)
    assert done.returncode == 0, f"`{' '.join(args)}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


#: the project's size limits (CONTRIBUTING.md): small modules and functions a newcomer can read
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600


def test_package_size_limits() -> None:
    """No function of the package over 80 lines (decorators and docstring included), no module over 600."""
    over = []
    for path in sorted((ROOT / "xarray_tensogram").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            over.append(f"{where}: module of {lines} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(source, filename=str(where))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    over.append(
                        f"{where}:{node.lineno}: {node.name}() of {length} lines (at most {MAX_FUNCTION_LINES})"
                    )
    assert not over, "split by job:\n" + "\n".join(over)


#: functions (and methods, classes) that radon grades D or worse: cyclomatic complexity over 20, what
#: ``radon cc -s -n D xarray_tensogram`` lists. The project's target was at most 8; there are none now. A function
#: that needs more branches wants a table or a smaller job, not a higher bound.
MAX_COMPLEX_FUNCTIONS = 0


def test_complex_functions_bounded() -> None:
    """At most MAX_COMPLEX_FUNCTIONS blocks of the package graded D or worse, so no change adds one."""
    from radon.complexity import cc_rank, cc_visit

    graded = []
    for path in sorted((ROOT / "xarray_tensogram").rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if cc_rank(block.complexity) in "DEF":
                graded.append(f"{path.relative_to(ROOT)}:{block.lineno} {block.fullname} {block.complexity}")
    assert len(graded) <= MAX_COMPLEX_FUNCTIONS, (
        f"{len(graded)} blocks graded D or worse (at most {MAX_COMPLEX_FUNCTIONS}); make the new one simpler:\n"
        + "\n".join(graded)
    )
