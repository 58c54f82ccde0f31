"""Reading a totals document back: the JSON ``to_json`` gave, as its types again.

What reads a document that went through a JSON-only step (redaction rewrites every string
of the JSON, ``summary``'s human view shows what it left) reads it back here, so that it
too reads attributes. One rule for every part: each field of the dataclass is read from
the key of its name (a key the JSON lacks leaves the field's default), parts nested in it
by their own types, lists as tuples; other keys are not read.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def from_json(cls: type[T], data: Mapping[str, Any]) -> T:
    """The ``cls`` (a dataclass of the totals document) whose ``to_json`` is ``data``."""
    hints = typing.get_type_hints(cls)
    kwargs = {
        field.name: _value(hints[field.name], data[field.name])
        for field in dataclasses.fields(cls)  # type: ignore[arg-type]
        if field.name in data
    }
    return cls(**kwargs)


def _value(hint: Any, value: Any) -> Any:
    """``value`` of the JSON as the type ``hint`` says: parts by their types, lists as
    tuples, maps with their values read; a plain value as it is."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        parts = [a for a in typing.get_args(hint) if _structured(a)]
        return _value(parts[0], value) if len(parts) == 1 else value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return from_json(hint, value)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_value(item, v) for v in value)
    if origin is Mapping:
        item = typing.get_args(hint)[1]
        return {key: _value(item, v) for key, v in value.items()}
    return value


def _structured(hint: Any) -> bool:
    """Whether ``hint`` is a part, a tuple or a map (not a plain value or None)."""
    return dataclasses.is_dataclass(hint) or typing.get_origin(hint) in (tuple, Mapping)
