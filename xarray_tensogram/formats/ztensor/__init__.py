"""zTensor (``.zt``): read v0.1, v1 and v2 files, write v0.1. No xarray inside.

See ``shared/specs/ztensor.md``; ``open_ztensor`` is the low-level API and
``write_ztensor_v01`` the writer that ``to_ztensor`` builds on.
"""

from .containers import MAGIC_V01, MAGIC_V1, MAGIC_V2
from .decode import TensorReader, verify_digest
from .model import Part, TensorInfo
from .reader import ZTensorFile, open_ztensor
from .writer import write_ztensor_v01

__all__ = [
    "MAGIC_V01",
    "MAGIC_V1",
    "MAGIC_V2",
    "Part",
    "TensorInfo",
    "TensorReader",
    "ZTensorFile",
    "open_ztensor",
    "verify_digest",
    "write_ztensor_v01",
]
