"""Turn one mapping (a CSV row, a JSON object) into a ParsedDocument via a field mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sources.ingest.base import (
    IngestError,
    ParsedDocument,
    optional_str,
    optional_url,
    parse_published,
    require_text,
)

DEFAULT_FIELDS = {"text": "text", "title": "title", "url": "url", "published": "published"}


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def field_mapping(options: Mapping[str, Any]) -> dict[str, str]:
    mapping = dict(DEFAULT_FIELDS)
    custom = options.get("mapping") or {}
    unknown = set(custom) - set(DEFAULT_FIELDS)
    if unknown:
        raise IngestError(f"unknown mapping keys {sorted(unknown)}; allowed: {sorted(DEFAULT_FIELDS)}")
    mapping.update({k: str(v) for k, v in custom.items()})
    return mapping


def record_to_document(
    record: Mapping[str, Any],
    mapping: Mapping[str, str],
    *,
    filename: str,
    line: int | None,
    max_chars: int,
    provenance_key: str = "line",
    position: int | None = None,
) -> ParsedDocument:
    if not isinstance(record, Mapping):
        raise IngestError(f"expected an object, got {type(record).__name__}", line=line)
    used = {mapping["text"], mapping["title"], mapping["url"], mapping["published"]}
    text_field = mapping["text"]
    if text_field not in record:
        raise IngestError("missing", line=line, field=text_field)
    metadata = {k: v for k, v in record.items() if k not in used}
    for key, value in metadata.items():
        if _has_nul(key) or _has_nul(value):  # PostgreSQL jsonb cannot hold NUL
            raise IngestError("contains a NUL character", line=line, field=key.replace("\x00", "\\u0000"))
    return ParsedDocument(
        text=require_text(record[text_field], line=line, field_name=text_field, max_chars=max_chars),
        title=optional_str(record.get(mapping["title"]), line=line, field_name=mapping["title"], max_chars=500),
        url=optional_url(record.get(mapping["url"]), line=line, field_name=mapping["url"]),
        published_at=parse_published(record.get(mapping["published"]), line=line, field_name=mapping["published"]),
        metadata=metadata,
        provenance={"file": filename, provenance_key: line if position is None else position},
    )
