"""Codecs: compressors, filters, encodings, bitmaps, hashes and CBOR. Bytes and plain parameters in, bytes or
arrays out; no I/O and no format knowledge (each format maps its own vocabulary onto codec objects).

Core codecs (zstd, xxh3) use core dependencies; the others import their package lazily through
:func:`.optional.require`, so a missing package only matters when a payload needs it, and the error then names
the pip extra to install.
"""
