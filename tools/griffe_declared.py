"""A griffe extension for the API page: methods whose signature is built from a declaration at run time.

The backend's ``open_dataset``, ``open_datatree`` and ``open_groups_as_dict`` are written as
``(self, filename_or_obj, **options)`` and decorated with ``_declared_signature``, which sets their
``__signature__`` and docstring from ``xarray_tensogram.options`` when the class is defined. mkdocstrings
reads the source, so without this the page would show ``**options: Any``; here each such method gets
the parameters and docstring it has at run time (what ``help()`` and xarray see).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import griffe

DECORATOR = "_declared_signature"


class DeclaredSignatures(griffe.Extension):
    """Replace the source signature and docstring of each ``@_declared_signature`` method by the run-time ones."""

    def on_function_instance(self, *, node: Any, func: griffe.Function, agent: Any, **kwargs: Any) -> None:
        if not any(str(d.value) == DECORATOR for d in func.decorators):
            return
        runtime: Any = importlib.import_module(func.module.path)
        for part in func.path[len(func.module.path) + 1 :].split("."):
            runtime = getattr(runtime, part)
        func.parameters = griffe.Parameters(
            *(
                griffe.Parameter(
                    p.name,
                    annotation=None if p.annotation is p.empty else str(p.annotation),
                    kind=griffe.ParameterKind(p.kind.description),
                    default=None if p.default is p.empty else repr(p.default),
                )
                for p in inspect.signature(runtime).parameters.values()
            )
        )
        old = func.docstring
        func.docstring = griffe.Docstring(
            inspect.cleandoc(runtime.__doc__ or ""),
            lineno=old.lineno if old else None,
            endlineno=old.endlineno if old else None,
            parent=func,
            parser=old.parser if old else None,
            parser_options=old.parser_options if old else None,
        )
