"""Typed, validated parameter sets: one frozen dataclass per strategy (and one for estimation).

Each field may carry bounds and a help text in its metadata (:func:`param`). The edges of the
product (API, forms, CLI) call :func:`parse_params` with the raw mapping a user sent; it
rejects unknown names and wrong types or ranges with one message per field, so nothing
half-valid reaches a worker.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import TypedDict, TypeVar

from core.engine.types import JSONObject, JSONValue

P = TypeVar("P", bound="ParamSet")
T = TypeVar("T")


class ParamError(ValueError):
    """Invalid parameters; ``errors`` maps each offending field to a message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)


def param(
    default: T,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[str, ...] | None = None,
    help: str = "",  # noqa: A002 - the keyword reads as what it is: param(3, help="...")
) -> T:
    """A dataclass field with bounds (inclusive) or choices, and a one-line explanation."""
    return dataclasses.field(default=default, metadata={"low": low, "high": high, "choices": choices, "help": help})


@dataclasses.dataclass(frozen=True)
class ParamSet:
    """Base of every parameter set; subclasses are frozen dataclasses of plain values."""

    def as_dict(self) -> JSONObject:
        return dataclasses.asdict(self)  # plain values (bool, int, float, str, None)


@dataclasses.dataclass(frozen=True)
class NoParams(ParamSet):
    """A strategy with nothing to tune."""


class ParamInfo(TypedDict):
    """One parameter as :func:`describe` tells it."""

    name: str
    type: str  # bool, int, float or str
    default: JSONValue
    low: float | None
    high: float | None
    choices: list[str] | None
    help: str


def describe(cls: type[ParamSet]) -> list[ParamInfo]:
    """Name, type, default, bounds and help of every field (for forms, the API and docs)."""
    hints = typing.get_type_hints(cls)
    out: list[ParamInfo] = []
    for f in dataclasses.fields(cls):
        out.append(
            {
                "name": f.name,
                "type": _base_type(hints[f.name]).__name__,
                "default": typing.cast(JSONValue, f.default),  # a plain value: param() always gives one
                "low": f.metadata.get("low"),
                "high": f.metadata.get("high"),
                "choices": list(f.metadata["choices"]) if f.metadata.get("choices") else None,
                "help": f.metadata.get("help", ""),
            }
        )
    return out


def _base_type(hint: object) -> type:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _base_type(args[0])
    if isinstance(hint, type):
        return hint
    raise TypeError(f"unsupported parameter type {hint!r}")


def _coerce(name: str, value: object, kind: type) -> bool | int | float | str:
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ValueError(f"{name} must be true or false.")
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be a whole number.")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
            raise ValueError(f"{name} must be a number.")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f"{name} must be text.")
        return value
    raise ValueError(f"{name} has an unsupported type.")


def parse_params(cls: type[P], raw: Mapping[str, object] | None, defaults: Mapping[str, object] | None = None) -> P:
    """Validate ``raw`` against ``cls``; ``defaults`` (e.g. from settings) fill fields the
    user did not send and that ``cls`` has (others are ignored). Raises ParamError."""
    raw = dict(raw or {})
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    errors: dict[str, str] = {}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        known = ", ".join(sorted(fields)) or "none"
        errors["params"] = f"Unknown parameter(s): {', '.join(unknown)} (this strategy takes: {known})."
    values: dict[str, object] = {}
    for name, f in fields.items():
        if name in raw and raw[name] is not None:
            value = raw[name]
        elif defaults is not None and name in defaults and defaults[name] is not None:
            value = defaults[name]
        else:
            continue
        try:
            value = _coerce(name, value, _base_type(hints[name]))
            low, high, choices = f.metadata.get("low"), f.metadata.get("high"), f.metadata.get("choices")
            if choices and value not in choices:
                raise ValueError(f"{name} must be one of: {', '.join(choices)}.")
            if low is not None and high is not None and not low <= value <= high:
                what = "a whole number" if isinstance(value, int) else "a number"
                raise ValueError(f"{name} must be {what} from {low:g} to {high:g}.")
            if low is not None and high is None and value < low:
                raise ValueError(f"{name} must be at least {low:g}.")
        except ValueError as exc:
            errors[name] = str(exc)
            continue
        values[name] = value
    if errors:
        raise ParamError(errors)
    return cls(**values)


def parse_assignments(pairs: Iterable[str]) -> dict[str, JSONValue]:
    """NAME=VALUE pairs as raw parameters for parse_params (the ask command's --param, the
    benchmark's method parameters): VALUE as JSON reads it (5, 0.2, true), a bare word as text.
    Raises ValueError naming the first pair that is not NAME=VALUE."""
    params: dict[str, JSONValue] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{pair!r}: write NAME=VALUE")
        try:
            params[name.strip()] = json.loads(value)
        except json.JSONDecodeError:
            params[name.strip()] = value  # a bare word is text
    return params
