"""Tetration THST footer JSON: decode and validate (history rows, per-dataset metadata), and encode."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Sized
from typing import Any

from ...conventions import TETR_FILE_KEYS
from ...errors import (
    LimitExceededError,
    MetadataError,
)
from .model import _HISTORY_KEYS, FOOTER_MAGIC, FOOTER_TAIL, LIMITS, MAX_JSON_DEPTH


def _check_str(value: Any, what: str, prefix: str, *, limits: bool = True) -> str:
    """A JSON string that is valid UTF-8 and, with ``limits``, 1..1024 bytes long."""
    if not isinstance(value, str):
        raise MetadataError(f"{prefix}{what} must be a string, got {type(value).__name__}")
    try:
        n = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise MetadataError(f"{prefix}{what} is not valid Unicode (lone surrogate): {exc}") from exc
    if limits and not 1 <= n <= LIMITS["string"]:
        raise LimitExceededError(f"{prefix}{what} is {n} bytes of UTF-8, expected 1..{LIMITS['string']}")
    return value


def _check_count(items: Sized, limit_key: str, what: str, prefix: str) -> None:
    if len(items) > LIMITS[limit_key]:
        raise LimitExceededError(f"{prefix}{what} has {len(items)} entries, the limit is {LIMITS[limit_key]}")


def _text_list(value: Any, what: str, item: str, p: str, limit: str | None) -> list[str]:
    """A JSON array of strings (``what``, each an ``item``), at most ``LIMITS[limit]`` of them; None: no limits."""
    if not isinstance(value, list):
        raise MetadataError(f"{p}{what} must be an array of strings")
    if limit is not None:
        _check_count(value, limit, what, p)
    return [_check_str(v, item, p, limits=limit is not None) for v in value]


def _text_map(value: Any, what: str, item: str, p: str, limit: str | None) -> dict[str, str]:
    """A JSON object of strings (``what``, keys and values of ``item``s), at most ``LIMITS[limit]`` entries."""
    if not isinstance(value, dict):
        raise MetadataError(f"{p}{what} must be an object of strings")
    if limit is not None:
        _check_count(value, limit, what, p)
    on = limit is not None
    return {
        _check_str(k, f"{item} key", p, limits=on): _check_str(v, f"{item} {k!r}", p, limits=on)
        for k, v in value.items()
    }


def _history_row(row: Any, i: int, prefix: str, *, limits: bool = False) -> dict[str, Any]:
    """One history row as a dict, legacy ``[op, source, at]`` triples normalised. The reference enforces the
    per-row string and count limits only when writing (``limits=True``); reading accepts any strings."""
    p = f"{prefix}history row {i}: "
    if isinstance(row, (list, tuple)):
        if len(row) != 3:
            raise MetadataError(f"{p}a legacy row must be [op, source, at], got {len(row)} items")
        row = dict(zip(("op", "source", "at"), row, strict=True))
    if not isinstance(row, Mapping):
        raise MetadataError(f"{p}expected an object or a [op, source, at] array, got {type(row).__name__}")
    unknown = set(row) - set(_HISTORY_KEYS)
    if unknown:
        raise MetadataError(f"{p}unknown keys {sorted(unknown)} (expected {list(_HISTORY_KEYS)})")
    out: dict[str, Any] = {}
    for key in ("op", "source", "at"):
        if key not in row:
            raise MetadataError(f"{p}missing {key!r}")
        out[key] = _check_str(row[key], key, p, limits=limits)
    for key, read, item in (("parents", _text_list, "parent"), ("params", _text_map, "param")):
        if row.get(key) is not None:
            out[key] = read(row[key], key, item, p, key if limits else None)
    return out


def _dataset_meta(name: str, meta: Any, prefix: str) -> dict[str, Any]:
    """Validate one ``metadata.datasets`` entry (unknown keys ignored, as the reference does)."""
    p = f"{prefix}metadata of dataset {name!r}: "
    if not isinstance(meta, dict):
        raise MetadataError(f"{p}expected an object, got {type(meta).__name__}")
    out: dict[str, Any] = {}
    for key, read, item in (("attrs", _text_map, "attr"), ("dim_names", _text_list, "dim name")):
        if meta.get(key) is not None:
            out[key] = read(meta[key], key, item, p, key)
    coords = meta.get("coords")
    if coords is not None:
        if not isinstance(coords, dict):
            raise MetadataError(f"{p}coords must be an object")
        _check_count(coords, "coord_axes", "coords", p)
        out["coords"] = {}
        for axis, spec in coords.items():
            _check_str(axis, "coord axis key", p)
            if not isinstance(spec, dict) or not isinstance(spec.get("labels"), list):
                raise MetadataError(f"{p}coords[{axis!r}] must be an object with a 'labels' array")
            out["coords"][axis] = _text_list(
                spec["labels"], f"coords[{axis!r}].labels", f"label of axis {axis!r}", p, "labels"
            )
    return out


def _metadata(meta: Any, prefix: str) -> tuple[dict[str, str] | None, dict[str, dict[str, Any]]]:
    """``(file metadata or None, {dataset name: validated metadata})`` from a metadata object."""
    if meta is None:
        return None, {}
    if not isinstance(meta, dict):
        raise MetadataError(f"{prefix}metadata must be an object, got {type(meta).__name__}")
    file_meta = meta.get("file")
    if file_meta is not None:
        if not isinstance(file_meta, dict):
            raise MetadataError(f"{prefix}metadata.file must be an object")
        file_meta = {
            k: _check_str(file_meta[k], f"file {k}", prefix) for k in TETR_FILE_KEYS if file_meta.get(k) is not None
        }
    datasets = meta.get("datasets") or {}
    if not isinstance(datasets, dict):
        raise MetadataError(f"{prefix}metadata.datasets must be an object")
    _check_count(datasets, "datasets", "metadata.datasets", prefix)
    return file_meta, {_check_str(k, "dataset key", prefix): _dataset_meta(k, v, prefix) for k, v in datasets.items()}


def _json_bytes(obj: Any) -> bytes:
    """Compact JSON exactly as serde_json writes it (non-ASCII kept, no spaces)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _parse_json(data: bytes, what: str, prefix: str) -> Any:
    """One JSON value, nested at most ``MAX_JSON_DEPTH`` deep (serde_json's recursion limit)."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise LimitExceededError(
            f"{prefix}{what} is nested too deeply (the limit is {MAX_JSON_DEPTH} levels)"
        ) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MetadataError(f"{prefix}{what} is not valid UTF-8 JSON: {exc}") from exc
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise LimitExceededError(f"{prefix}{what} is nested deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return obj


def _wire_history_row(row: Mapping[str, Any] | Sequence[str]) -> dict[str, Any]:
    """A row in wire key order (op, source, at, parents, params; params sorted); validated."""
    checked = _history_row(row, 0, "history to write: ", limits=True)
    if checked.get("params"):
        checked["params"] = _sorted_map(checked["params"])
    return {k: v for k, v in checked.items() if v}  # op, source and at are never empty


def _sorted_map(m: Mapping[str, Any]) -> dict[str, Any]:
    return dict(sorted(m.items(), key=lambda kv: kv[0].encode("utf-8")))


def _wire_dataset_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Validated metadata (:func:`_dataset_meta`: attrs, dim_names, coords in that order) in wire form: empty
    attrs left out, maps sorted by UTF-8 bytes (Rust BTreeMap), labels wrapped."""
    wire = {k: v if k == "dim_names" else _sorted_map(v) for k, v in meta.items() if v or k != "attrs"}
    if "coords" in wire:
        wire["coords"] = {k: {"labels": v} for k, v in wire["coords"].items()}
    return wire


def encode_footer(history: Sequence[Any], metadata: Mapping[str, Any] | None, payload_end: int) -> bytes:
    """Spill (if any) + footer JSON + 16-byte tail, as ``write_footer_blob`` appends them at ``payload_end``.
    ``metadata`` is the wire-form object (``{"file": ..., "datasets": ...}``) or ``None``. Limits are checked
    first; metadata whose inline footer would exceed 64 KiB is spilled."""
    rows = [_wire_history_row(r) for r in history]
    _check_count(rows, "history", "history", "history to write: ")
    inline: dict[str, Any] = {"history": rows}
    if metadata is not None:
        file_meta, datasets = _metadata(dict(metadata), "metadata to write: ")
        meta = inline["metadata"] = {} if file_meta is None else {"file": file_meta}
        if datasets:
            meta["datasets"] = {k: _wire_dataset_meta(v) for k, v in _sorted_map(datasets).items()}
    footer = _json_bytes(inline)
    spill = b""
    if len(footer) > LIMITS["inline_json"]:
        spill = _json_bytes(inline.get("metadata"))
        if len(spill) > LIMITS["spill"]:
            raise LimitExceededError(
                f"metadata to write: {len(spill)} bytes of JSON, the spill limit is {LIMITS['spill']}"
            )
        footer = _json_bytes({"history": rows, "metadata_ref": {"offset": payload_end, "len": len(spill)}})
        if len(footer) > LIMITS["inline_json"]:
            raise LimitExceededError(
                f"history to write: footer JSON is {len(footer)} bytes, the limit is {LIMITS['inline_json']}"
            )
    return spill + footer + FOOTER_TAIL.pack(len(footer), 1, FOOTER_MAGIC)
