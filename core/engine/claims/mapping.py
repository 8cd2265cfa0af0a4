"""The declarative claim mapping: how a record (CSV row, JSON object, XML element) becomes claims.

A mapping, as JSON (given on the CLI, in the admin upload form and in the API)::

    {
      "subject": "flight",                     # field(s) naming the entity; a list joins with " "
      "subject_normalizer": "raw",             # optional, default "raw"
      "source": "src",                         # optional: field naming each record's source
      "attributes": {                          # claim attribute -> normaliser, or
        "act_dep_time": "time",                #   {"field": "record field", "normalizer": "..."}
        "authors": {"field": "author list", "normalizer": "name-list"},
        "departure": {"field": "dep", "normalizer": "time", "tolerance": 1}
      },                                       # tolerance: values that close are one value
                                               #   (core.engine.claims.tolerance)
      "columns": ["store", "isbn", "title", "authors"],   # optional: a headerless CSV/TSV
      "records": "data.items"                  # optional: JSON path to the array of records,
    }                                          #   or the XML element tag of one record

Fields are dotted paths into nested objects ("author.name"); a list of scalars is joined
with "; ". A record without its subject (or without its source field, when the mapping has
one) is an error and rejects the whole file; a missing or empty attribute value is no claim
(the source says nothing about it). Values are bounded (types.MAX_*_CHARS).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.engine.claims.normalize import NORMALIZERS, get_normalizer
from core.engine.claims.tolerance import Tolerance, ToleranceError, parse_tolerance
from core.engine.claims.types import (
    MAX_ATTRIBUTE_BYTES,
    MAX_ATTRIBUTE_CHARS,
    MAX_SUBJECT_BYTES,
    MAX_SUBJECT_CHARS,
    MAX_VALUE_CHARS,
    ExtractedClaim,
    too_long,
)
from core.engine.types import JSONObject, JSONValue

MAX_ATTRIBUTES = 200
MAPPING_KEYS = {"subject", "subject_normalizer", "source", "attributes", "columns", "records"}
ATTRIBUTE_KEYS = {"field", "normalizer", "tolerance"}


class MappingError(ValueError):
    """A mapping that cannot be used, or a record it cannot read; ``field`` names the culprit."""

    def __init__(self, message: str, *, field: str | None = None):
        self.reason = message
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


@dataclass(frozen=True)
class AttributeSpec:
    name: str  # the claim's attribute
    field: str  # the record field it is read from (a dotted path)
    normalizer: str = "text"
    tolerance: Tolerance | None = None  # values this close are one value (None: exact)

    def spec_json(self) -> JSONValue:
        if self.field == self.name and self.tolerance is None:
            return self.normalizer
        out: JSONObject = {"field": self.field, "normalizer": self.normalizer}
        if self.tolerance is not None:
            t = self.tolerance
            out["tolerance"] = t.spec if t.relative else (int(t.amount) if t.amount.is_integer() else t.amount)
        return out


@dataclass(frozen=True)
class ClaimMapping:
    subject: tuple[str, ...]
    attributes: tuple[AttributeSpec, ...]
    subject_normalizer: str = "raw"
    source: str | None = None
    columns: tuple[str, ...] | None = None
    records: str | None = None

    # -- parsing -------------------------------------------------------------------------

    @classmethod
    def from_json(cls, data: object) -> ClaimMapping:
        """Validate a mapping given as parsed JSON; MappingError names the key at fault."""
        if not isinstance(data, Mapping):
            raise MappingError("a claim mapping is a JSON object", field="mapping")
        unknown = sorted(set(data) - MAPPING_KEYS)
        if unknown:
            raise MappingError(f"unknown keys {unknown}; allowed: {sorted(MAPPING_KEYS)}", field="mapping")
        subject = _field_list(data.get("subject"), "subject")
        subject_normalizer = _normalizer_name(data.get("subject_normalizer", "raw"), "subject_normalizer")
        source = data.get("source")
        if source is not None:
            source = _field_name(source, "source")
        attributes = _attributes(data.get("attributes"))
        columns = data.get("columns")
        if columns is not None:
            columns = _field_list(columns, "columns")
            if len(set(columns)) != len(columns):
                raise MappingError("column names repeat", field="columns")
        records = data.get("records")
        if records is not None:
            records = _field_name(records, "records")
        return cls(
            subject=tuple(subject),
            attributes=tuple(attributes),
            subject_normalizer=subject_normalizer,
            source=source,
            columns=tuple(columns) if columns is not None else None,
            records=records,
        )

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "subject": list(self.subject) if len(self.subject) > 1 else self.subject[0],
            "attributes": {a.name: a.spec_json() for a in self.attributes},
        }
        if self.subject_normalizer != "raw":
            out["subject_normalizer"] = self.subject_normalizer
        if self.source:
            out["source"] = self.source
        if self.columns:
            out["columns"] = list(self.columns)
        if self.records:
            out["records"] = self.records
        return out

    def tolerances(self) -> dict[str, Tolerance]:
        """Attribute -> its declared tolerance (only the attributes that declare one)."""
        return {a.name: a.tolerance for a in self.attributes if a.tolerance is not None}

    @property
    def fields(self) -> set[str]:
        """The top-level record fields the mapping reads."""
        paths = [*self.subject, *(a.field for a in self.attributes), *([self.source] if self.source else [])]
        return {p.split(".", 1)[0] for p in paths}

    def check_header(self, header: Sequence[str]) -> None:
        """A tabular file must have every column the mapping reads."""
        missing = sorted(self.fields - set(header))
        if missing:
            raise MappingError(f"no column {missing[0]!r} in the header {list(header)}", field=missing[0])

    # -- extraction ----------------------------------------------------------------------

    def extract(self, record: object, provenance: Mapping[str, JSONValue]) -> list[ExtractedClaim]:
        """The claims of one record; MappingError (with the field) when it cannot be read."""
        if not isinstance(record, Mapping):
            raise MappingError(f"expected an object, got {type(record).__name__}")
        parts = []
        for path in self.subject:
            value = _scalar(_lookup(record, path), path)
            if value is None or not value.strip():
                raise MappingError("missing subject", field=path)
            parts.append(value.strip())
        subject = get_normalizer(self.subject_normalizer)(" ".join(parts))
        if not subject:
            raise MappingError(f"subject {' '.join(parts)[:60]!r} is empty once normalised", field=self.subject[0])
        if reason := too_long(subject, MAX_SUBJECT_CHARS, MAX_SUBJECT_BYTES):
            raise MappingError(reason, field=self.subject[0])
        source: str | None = None
        if self.source:
            source = _scalar(_lookup(record, self.source), self.source)
            if source is None or not source.strip():
                raise MappingError("missing source", field=self.source)
            source = source.strip()
            _bounded(source, 200, self.source)
        claims = []
        for spec in self.attributes:
            raw = _scalar(_lookup(record, spec.field), spec.field)
            if raw is None:
                continue
            _bounded(raw, MAX_VALUE_CHARS, spec.field)
            value = get_normalizer(spec.normalizer)(raw)
            if value is None:
                continue
            claims.append(
                ExtractedClaim(
                    subject=subject,
                    attribute=spec.name,
                    value=value[:MAX_VALUE_CHARS],
                    raw_value=raw.strip(),
                    source=source,
                    provenance={**provenance, "field": spec.field},
                    method="mapping",
                )
            )
        return claims


def _lookup(record: Mapping[str, object], path: str) -> object:
    if path in record:
        return record[path]
    node: object = record
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _scalar(value: object, field: str) -> str | None:
    """A record value as text: strings, numbers and booleans; a list of those joined by "; "."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        text = str(value)
    elif isinstance(value, list) and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value):
        text = "; ".join(str(v) for v in value)
    else:
        raise MappingError(f"expected a value or a list of values, got {type(value).__name__}", field=field)
    if "\x00" in text:
        raise MappingError("contains a NUL character", field=field)
    return text


def _bounded(text: str, limit: int, field: str) -> None:
    if len(text) > limit:
        raise MappingError(f"longer than {limit} characters", field=field)


def _field_name(value: object, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MappingError("expected a non-empty field name", field=key)
    if reason := too_long(value, MAX_ATTRIBUTE_CHARS, MAX_ATTRIBUTE_BYTES):
        raise MappingError(reason, field=key)
    return value.strip()


def _field_list(value: object, key: str) -> list[str]:
    if isinstance(value, str):
        return [_field_name(value, key)]
    if isinstance(value, list) and value:
        return [_field_name(v, f"{key}[{i}]") for i, v in enumerate(value)]
    raise MappingError("expected a field name or a non-empty list of them", field=key)


def _normalizer_name(value: object, key: str) -> str:
    if not isinstance(value, str) or value not in NORMALIZERS:
        raise MappingError(f"unknown normaliser {value!r}; known: {', '.join(NORMALIZERS)}", field=key)
    return value


def _attributes(value: object) -> list[AttributeSpec]:
    if not isinstance(value, Mapping) or not value:
        raise MappingError("expected a non-empty object of attribute -> normaliser", field="attributes")
    if len(value) > MAX_ATTRIBUTES:
        raise MappingError(f"more than {MAX_ATTRIBUTES} attributes", field="attributes")
    specs = []
    for name, spec in value.items():
        key = f"attributes.{name}"
        attribute = _field_name(name, key)
        if isinstance(spec, str):
            specs.append(AttributeSpec(attribute, attribute, _normalizer_name(spec, key)))
        elif isinstance(spec, Mapping):
            extra = sorted(set(spec) - ATTRIBUTE_KEYS)
            if extra:
                raise MappingError(f"unknown keys {extra}; allowed: {sorted(ATTRIBUTE_KEYS)}", field=key)
            normalizer = _normalizer_name(spec.get("normalizer", "text"), f"{key}.normalizer")
            tolerance = None
            if spec.get("tolerance") is not None:
                try:
                    tolerance = parse_tolerance(normalizer, spec["tolerance"])
                except ToleranceError as exc:
                    raise MappingError(str(exc), field=f"{key}.tolerance") from None
            specs.append(
                AttributeSpec(
                    attribute, _field_name(spec.get("field", attribute), f"{key}.field"), normalizer, tolerance
                )
            )
        else:
            raise MappingError("expected a normaliser name or {field, normalizer, tolerance}", field=key)
    return specs
