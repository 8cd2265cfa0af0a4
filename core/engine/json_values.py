"""Typed reads of JSON a job or a run stored (its params, its result): each checks the one
value it needs and says what it found instead of indexing raw JSON blindly."""

from __future__ import annotations

from core.engine.types import JSONObject, JSONValue


def as_int(value: JSONValue, where: str) -> int:
    """A stored id or count: a JSON number or digits in a string, as int() takes them."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{where}: expected a whole number, got {value!r}")
    return int(value)


def as_object(value: JSONValue) -> JSONObject:
    """A stored JSON object; anything else reads as an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: JSONValue) -> list[JSONValue]:
    """A stored JSON array; anything else reads as an empty one."""
    return value if isinstance(value, list) else []


def as_str_list(value: JSONValue, where: str) -> list[str]:
    """A stored array of strings (paths, names)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: expected a list of strings, got {value!r}"[:200])
    return [str(v) for v in value]
