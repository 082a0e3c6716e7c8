"""A ``.tgm`` variable's pipeline: explicit ``encoding=`` > the pipeline it was read with > defaults.

The pipeline stages (``encoding``, ``filter``, ``compression``) are ``encoding=`` keys whose values name the
codecs of Tensogram's table (:data:`~..formats.tensogram.compression.STAGES`) that can be written; their
parameters are accepted under the descriptor's names (``zstd_level``) and, where only one codec has the name,
the codec's own (``level``). :data:`ENCODING` is what :mod:`.encoding_check` holds a ``.tgm`` entry to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..codecs.base import PASSTHROUGH
from ..formats.tensogram.compression import MASK_METHODS, STAGES, codecs_in_use, descriptor_defaults, descriptor_key
from ..formats.tensogram.encode import PIPELINE_PARAMS, PIPELINE_VALUES, check_pipeline
from .encoding_check import CodecKey, EncodingKeys, InEffect, Option

__all__ = ["ENCODING", "pipeline_in_effect", "resolve_pipeline"]

_STAGES = tuple(PIPELINE_VALUES)


def _codec_key(stage: str) -> CodecKey:
    table = STAGES[stage]
    return CodecKey(
        stage,
        {n: table[n] for n in PIPELINE_VALUES[stage]},
        readable=tuple(n for n in table if n not in PIPELINE_VALUES[stage]),
        spellings=lambda codec, p: (descriptor_key(codec, p.name), *((p.name,) if p.name in _ENCODING_ALIASES else ())),
    )


#: the descriptor key of each parameter a user may set (of a writable codec, not derived) -> the parameter's name
_SETTABLE = {
    descriptor_key(codec, p.name): p.name
    for stage, values in PIPELINE_VALUES.items()
    for codec in (STAGES[stage][n] for n in values)
    for p in codec.params
    if not p.derived
}
#: encoding keys accepted per variable under a parameter's own name (``level``), where only one codec has it
_ENCODING_ALIASES = {name: key for key, name in _SETTABLE.items() if list(_SETTABLE.values()).count(name) == 1}
#: every descriptor key a user may set: the stages, their parameters (the packing values too), the byte order
_DESCRIPTOR_KEYS = frozenset({*PIPELINE_VALUES, *_SETTABLE, "byte_order"})


def _source_pipeline(var_encoding: Mapping[str, Any]) -> dict[str, Any]:
    """The pipeline a variable was read with (``tensogram_compression`` ...); foreign values are ignored
    (a netCDF ``compression: gzip`` is not ours), parameters of codecs not in use are dropped."""
    plain = _user_pipeline(var_encoding)
    stages = {stage: var_encoding.get(f"tensogram_{stage}", plain.get(stage)) for stage in _STAGES}
    desc = {s: v for s, v in stages.items() if isinstance(v, str) and v in PIPELINE_VALUES[s]}
    in_use = codecs_in_use(desc).values()
    return {**desc, **{k: plain[k] for k, codec in PIPELINE_PARAMS.items() if k in plain and codec in in_use}}


def _user_pipeline(encoding: Mapping[str, Any]) -> dict[str, Any]:
    desc: dict[str, Any] = {}
    for k, v in encoding.items():
        k2 = _ENCODING_ALIASES.get(k, k)
        if k2 in _DESCRIPTOR_KEYS:  # None: no codec, as in to_netcdf; numpy scalars as the Python ones CBOR holds
            desc[k2] = PASSTHROUGH.name if v is None and k2 in _STAGES else v.item() if isinstance(v, np.generic) else v
    return desc


def resolve_pipeline(var_encoding: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """Descriptor options for one variable: ``user`` (``encoding=``) overrides the source pipeline as a whole
    when it names a stage, else it adds parameters to it; then defaults fill what the stage needs. A
    ``mask_method`` it gives goes under ``_mask_method``, which the encoder takes as the object's own."""
    explicit = _user_pipeline(user)
    desc = {} if any(s in explicit for s in _STAGES) else _source_pipeline(var_encoding)
    desc.update(explicit)
    check_pipeline(desc)
    for key, value in descriptor_defaults(desc).items():
        desc.setdefault(key, value)
    if user.get("mask_method"):
        desc["_mask_method"] = user["mask_method"]
    return desc


#: ``encoding=`` for .tgm beside the CF keys every writer takes: each stage's codec with its parameters, and options
ENCODING = EncodingKeys(
    ".tgm",
    tuple(_codec_key(stage) for stage in _STAGES),
    {
        "byte_order": Option("byte order of the stored values", ("little", "big")),
        "mask_method": Option("how NaN/Inf positions are stored", (None, *MASK_METHODS)),
    },
)


def pipeline_in_effect(ds: xr.Dataset) -> InEffect:
    """The stages a variable keeps when its ``encoding=`` entry names none (the pipeline it was read with)."""
    return lambda name, enc: {} if any(s in enc for s in _STAGES) else _source_pipeline(ds.variables[name].encoding)
