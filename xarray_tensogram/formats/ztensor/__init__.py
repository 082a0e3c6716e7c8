"""zTensor (``.zt``): read v0.1, v1 and v2 files, write v0.1. No xarray inside.

See ``shared/specs/ztensor.md``; ``open_ztensor`` is the low-level API and
``write_ztensor_v01`` the writer that ``to_ztensor`` builds on.
"""

from .containers import MAGIC_V01, MAGIC_V1, MAGIC_V2, detect_version
from .decode import TensorReader, verify_digest
from .model import Part, TensorInfo
from .reader import ZTensorFile, open_ztensor
from .writer import write_ztensor_v01

__all__ = [
    "open_ztensor",
    "ZTensorFile",
    "TensorInfo",
    "Part",
    "TensorReader",
    "write_ztensor_v01",
    "verify_digest",
    "detect_version",
    "MAGIC_V01",
    "MAGIC_V1",
    "MAGIC_V2",
]
