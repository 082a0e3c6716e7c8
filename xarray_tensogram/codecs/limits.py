"""Size checks shared by the decoders: exact output sizes and the largest credible expansion ratios."""

from __future__ import annotations

import numpy as np

from ..errors import CodecError

__all__ = ["MAX_RATIO", "check_ratio", "check_size"]

#: largest decoded/stored ratio each codec can reach on real data, generously; a container promising
#: more is refused before anything is allocated (no 100 GB buffer for a 1 kB payload)
MAX_RATIO = {"szip": 16384, "zfp": 512, "sz3": 32768, "lz4": 255}


def check_ratio(codec: str, payload_len: int, expected: int, where: str = "") -> None:
    """Refuse ``expected`` decoded bytes that ``payload_len`` stored bytes of ``codec`` cannot produce."""
    limit = MAX_RATIO[codec] * max(payload_len, 1) + 4096
    if expected > limit:
        raise CodecError(
            f"{where}{codec} payload of {payload_len} bytes cannot decode to the {expected} bytes the descriptor "
            f"promises (more than {MAX_RATIO[codec]}:1)"
        )


def check_size(data: bytes | memoryview | np.ndarray, expected: int, codec: str, where: str = "") -> None:
    """Raise :class:`CodecError` unless ``data`` holds exactly ``expected`` bytes."""
    n = data.nbytes if isinstance(data, np.ndarray) else len(data)
    if n != expected:
        raise CodecError(f"{where}{codec} payload decodes to {n} bytes, expected {expected}")
