"""Test configuration: make the helpers next to the tests importable."""

import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# the metadata cache of a test session starts empty and never touches the user's cache directory
os.environ["XARRAY_TENSOGRAM_CACHE_DIR"] = _CACHE = tempfile.mkdtemp(prefix="xarray-tensogram-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fuzz suites' figures (cases, errors, worst allocation ratio), when a fuzz suite ran."""
    fuzzing = sys.modules.get("fuzzing")
    if fuzzing is not None:
        fuzzing.report(terminalreporter.write_line)
