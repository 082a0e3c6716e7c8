"""The code checks, run as tests of the suite: ruff (lint and format) and ``mypy --strict``.

Their configuration lives in ``pyproject.toml`` ([tool.ruff], [tool.mypy]); the tools come with the
``test`` extra. Each test runs the tool from the repository root in a subprocess, with this
interpreter, and fails with the tool's own output, which names the file, the line and the rule.
mypy also gets ``--strict`` on the command line, so the configuration cannot quietly weaken it.
mypy keeps its incremental cache in ``.mypy_cache/`` (git-ignored), so a re-run checks only what changed.
"""

from __future__ import annotations

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
