"""Test configuration: make the helpers next to the tests importable."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

# the metadata cache of a test session starts empty and never touches the user's cache directory
os.environ["XARRAY_TENSOGRAM_CACHE_DIR"] = tempfile.mkdtemp(prefix="xarray-tensogram-test-cache-")
