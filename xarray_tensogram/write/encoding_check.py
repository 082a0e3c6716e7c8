"""The one check of a writer's ``encoding=``: per variable, against the codec registry.

Each writer declares its :class:`EncodingKeys`: the keys whose value names a codec of its format's table
(``compression``; for ``.tgm`` also ``encoding`` and ``filter``), holding only the codecs it can write, and
its own options (``chunks``, ``checksum``, ...). A codec's parameters are accepted under the names the codec
declares (``.tgm`` also under its descriptor spelling, ``zstd_level``) for the codec in effect for that
variable only, and checked and completed by the codec itself (:meth:`~..codecs.base.Codec.resolve`). The CF
keys xarray's encoder consumes are accepted by every writer. Anything else is refused before a byte is
written, naming the variable and the key and listing what the format accepts.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

from ..codecs.base import PASSTHROUGH, Codec, Param
from ..errors import NoSuchVariableError, UnsupportedError, XarrayTensogramError, user_stacklevel

__all__ = [
    "CF_ENCODING_KEYS",
    "CodecKey",
    "CodecSetting",
    "EncodingKeys",
    "InEffect",
    "Option",
    "check_encoding",
    "markdown_table",
    "warn_codecs_unused",
]

#: encoding keys xarray's CF encoder consumes (what ``to_netcdf`` honours for every backend)
CF_ENCODING_KEYS = frozenset(
    {"dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar", "_Unsigned"}
)


@dataclass(frozen=True)
class CodecKey:
    """An ``encoding=`` key whose value names a codec: the format's file vocabulary for it -> the codec object
    (only codecs the format can write; ``readable`` lists those it can only read, for the error message)."""

    key: str
    codecs: Mapping[str, Codec]
    readable: tuple[str, ...] = ()
    #: the keys a parameter of a codec may be given as (by default the codec's own name for it, ``level``)
    spellings: Callable[[Codec, Param], tuple[str, ...]] = lambda codec, param: (param.name,)

    def lookup(self, value: Any) -> tuple[str, Codec] | None:
        """(vocabulary, codec) for a value: a table entry, a codec's own name, or None for no codec."""
        value = PASSTHROUGH.name if value is None else value
        if isinstance(value, str) and value in self.codecs:
            return value, self.codecs[value]
        return next(((k, c) for k, c in self.codecs.items() if isinstance(value, str) and c.name == value), None)

    def argument(self, value: Any) -> tuple[str, Codec]:
        """(vocabulary, codec) for the writer's file-wide argument of this key (``compression=``), or refused."""
        found = self.lookup(value)
        if found is None:
            raise UnsupportedError(f"{self.key} must be None or one of {', '.join(self.codecs)}; got {value!r}")
        return found

    def param_keys(self) -> dict[str, list[tuple[Codec, Param]]]:
        """Every key a parameter may be given as -> the (codec, parameter) pairs it means (derived ones left out)."""
        out: dict[str, list[tuple[Codec, Param]]] = {}
        for codec in dict.fromkeys(self.codecs.values()):
            for p in codec.params:
                if not p.derived:
                    for spelled in self.spellings(codec, p):
                        out.setdefault(spelled, []).append((codec, p))
        return out


@dataclass(frozen=True)
class Option:
    """A writer's own ``encoding=`` key: what it does, and its valid values (None: any, the writer checks)."""

    doc: str
    valid: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class EncodingKeys:
    """What one format's writer accepts in ``encoding={variable: {...}}``."""

    fmt: str
    codec_keys: tuple[CodecKey, ...] = ()
    options: Mapping[str, Option] = field(default_factory=dict)

    def accepted(self) -> list[str]:
        """Every key this format accepts, sorted (what an error lists, what the docs table shows)."""
        keys = set(CF_ENCODING_KEYS) | set(self.options)
        for ck in self.codec_keys:
            keys |= {ck.key, *ck.param_keys()}
        return sorted(keys)


@dataclass(frozen=True)
class CodecSetting:
    """The codec chosen for a variable under one codec key, with its parameters checked and completed."""

    vocabulary: str
    codec: Codec
    params: Mapping[str, Any]


#: the codec each codec key names for a variable when its ``encoding=`` entry does not (given the entry)
InEffect = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]


def _chosen(name: str, enc: Mapping[str, Any], spec: EncodingKeys, in_effect: InEffect) -> dict[str, tuple[str, Codec]]:
    """The codec of each codec key for this variable: the one ``enc`` names (checked), else the one in effect."""
    fallback = in_effect(name, enc)
    out: dict[str, tuple[str, Codec]] = {}
    for ck in spec.codec_keys:
        given = ck.key in enc
        found = ck.lookup(enc[ck.key] if given else fallback.get(ck.key))
        if found is None and given:
            value = enc[ck.key]
            read_only = f" ({value} can be read but not written)" if value in ck.readable else ""
            raise UnsupportedError(
                f"variable {name!r}: unknown {ck.key} {value!r}{read_only} for a {spec.fmt} file; "
                f"valid values: {', '.join(ck.codecs)}"
            )
        out[ck.key] = found if found is not None else ck.lookup(None) or next(iter(ck.codecs.items()))
    return out


def _params(
    name: str, enc: Mapping[str, Any], spec: EncodingKeys, chosen: Mapping[str, tuple[str, Codec]]
) -> dict[str, dict[str, Any]]:
    """The codec parameters ``enc`` gives, per codec key (own names); other keys must be CF keys or valid options."""
    out: dict[str, dict[str, Any]] = {}
    by_key = {ck.key: ck.param_keys() for ck in spec.codec_keys}
    unknown = sorted(set(enc) - set(spec.accepted()))
    if unknown:
        raise UnsupportedError(
            f"unexpected encoding parameters for variable {name!r}: {unknown}; accepted for a {spec.fmt} file: "
            f"{spec.accepted()}"
        )
    for key, value in enc.items():
        if key in CF_ENCODING_KEYS or key in by_key:
            continue
        if key in spec.options:
            valid = spec.options[key].valid
            if valid is not None and value not in valid:
                raise UnsupportedError(
                    f"variable {name!r}: {key} {value!r} is not valid for a {spec.fmt} file; valid values: "
                    f"{', '.join(map(repr, valid))}"
                )
            continue
        meanings = [(ck, c, p) for ck, params in by_key.items() for c, p in params.get(key, ())]
        match = next(((ck, p) for ck, c, p in meanings if chosen[ck][1] is c), None)
        if match is None:
            owners = sorted({f"{ck} {c.name}" for ck, c, _ in meanings})
            in_use = ", ".join(f"{ck} {chosen[ck][0]}" for ck in dict.fromkeys(ck for ck, _, _ in meanings))
            raise UnsupportedError(
                f"variable {name!r}: encoding key {key!r} is a parameter of {' or '.join(owners)}, but this "
                f"variable is written with {in_use}; name the codec in its encoding (or leave {key!r} out)"
            )
        ck_key, param = match
        if param.choices and value not in param.choices:
            raise UnsupportedError(
                f"variable {name!r}: unknown {key} {value!r}; valid values: {', '.join(map(str, param.choices))}"
            )
        out.setdefault(ck_key, {})[param.name] = value
    return out


def check_encoding(
    ds: xr.Dataset,
    encoding: Mapping[Hashable, Any] | None,
    spec: EncodingKeys,
    in_effect: InEffect,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, CodecSetting]]]:
    """The user's ``encoding=`` checked for ``spec``'s format: the entries as given, and per variable the codec
    settings it asks for (for each codec key that the entry names or gives parameters for).

    ``in_effect(name, entry)`` says which codec each codec key has for a variable whose entry does not name
    one (what it was read with, the writer's file-wide argument); parameters must belong to that codec.
    Raises (naming the variable) :class:`NoSuchVariableError`, :class:`UnsupportedError` or the codec's
    :class:`~..errors.EncodeError`.
    """
    entries: dict[str, dict[str, Any]] = {}
    settings: dict[str, dict[str, CodecSetting]] = {}
    for name, enc in (encoding or {}).items():
        if name not in ds.variables:
            raise NoSuchVariableError(
                f"encoding given for {name!r}, which is not a variable of the Dataset; variables: "
                f"{sorted(map(str, ds.variables))}"
            )
        if not isinstance(enc, Mapping):
            raise XarrayTensogramError(f"encoding for {name!r} must be castable to a dictionary, got {enc!r}")
        key = str(name)
        enc = {str(k): v for k, v in enc.items()}
        chosen = _chosen(key, enc, spec, in_effect)
        params = _params(key, enc, spec, chosen)
        settings[key] = {
            ck: CodecSetting(vocab, codec, codec.resolve(params.get(ck, {}), what=f"variable {key!r}: "))
            for ck, (vocab, codec) in chosen.items()
            if ck in enc or ck in params
        }
        entries[key] = enc
    return entries, settings


def warn_codecs_unused(
    settings: Mapping[str, Mapping[str, CodecSetting]], names: Iterable[str], why: str, category: type[Warning]
) -> None:
    """One warning per variable whose ``encoding=`` chose a codec that has nothing to compress: the format
    keeps it in metadata (``why`` says where), so the codec does not apply (never silently)."""
    for name in names:
        keys = sorted(settings.get(name, {}))
        if keys:
            text = f"variable {name!r}: {why}; its encoding {keys} does not apply to it"
            warnings.warn(text, category, stacklevel=user_stacklevel())


# -- the docs table (docs/writing.md holds its output; a test keeps them equal) ----------------------
def _value(value: Any) -> str:
    return f"`{value}`"


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _values(values: tuple[Any, ...]) -> str:
    """Valid values as listed (None, "the writer's default", is left out)."""
    return ", ".join(_value(v) for v in values if v is not None)


def _param_cell(param: Param, spelled: list[str]) -> str:
    valid = _values(param.choices) if param.choices else "..".join(map(_number, param.bounds or ())) or "any"
    default = f"default {_value(param.default)}" if param.default is not None else "no default"
    others = [k for k in spelled if k != param.name]
    return f"{default}; {valid}" + (f" (also {', '.join(map(_value, others))})" if others else "")


def _codec_rows(specs: tuple[EncodingKeys, ...]) -> list[list[str]]:
    rows: list[list[str]] = []
    keys = list(dict.fromkeys(ck.key for spec in specs for ck in spec.codec_keys))
    for key in keys:
        per = [next((ck for ck in spec.codec_keys if ck.key == key), None) for spec in specs]
        cells = [_values(tuple(ck.codecs)) if ck else "—" for ck in per]
        rows.append([_value(key), f"the {key} codec", *cells])
        params = list(dict.fromkeys((c, p) for ck in per if ck for ms in ck.param_keys().values() for c, p in ms))
        for codec, p in params:
            spelled = [
                [k for k, ms in ck.param_keys().items() if (codec, p) in ms] if ck is not None else [] for ck in per
            ]
            cells = [_param_cell(p, ks) if ks else "—" for ks in spelled]
            rows.append([_value(p.name), f"{codec.name}: {p.doc}", *cells])
    return rows


def markdown_table(specs: tuple[EncodingKeys, ...]) -> str:
    """The ``encoding=`` keys each format accepts, as a Markdown table built from the codec objects: codec keys
    with the codecs each format can write, each codec parameter with its default and valid values, the writers'
    own options, and the CF keys every writer takes."""
    head = ["`encoding=` key", "what", *(f"`{spec.fmt}`" for spec in specs)]
    rows = [[", ".join(map(_value, sorted(CF_ENCODING_KEYS))), "CF encoding, as `to_netcdf`", *("✓" for _ in specs)]]
    rows += _codec_rows(specs)
    for key in dict.fromkeys(k for spec in specs for k in spec.options):
        doc = next(spec.options[key].doc for spec in specs if key in spec.options)
        cells = [
            ("any" if o.valid is None else _values(o.valid)) if (o := spec.options.get(key)) else "—" for spec in specs
        ]
        rows.append([_value(key), doc, *cells])
    lines = [head, ["---"] * len(head), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines) + "\n"
