"""Test configuration: make the helpers next to the tests importable."""

import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

# the metadata cache of a test session starts empty and never touches the user's cache directory
os.environ["XARRAY_TENSOGRAM_CACHE_DIR"] = _CACHE = tempfile.mkdtemp(prefix="xarray-tensogram-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
