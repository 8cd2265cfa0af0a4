"""JSON (an array of objects, or {"documents": [...]}) and JSON Lines (one object per line)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from django.conf import settings

from core.engine.jsondepth import JsonTooDeep, loads_bounded
from sources.ingest.base import IngestError, ParsedDocument
from sources.ingest.records import field_mapping, record_to_document


def load_json(text: str, *, line: int | None = None) -> Any:
    """Parse JSON whose nesting is bounded by JSON_MAX_DEPTH; any problem is an IngestError
    with the line at fault (``line`` numbers a JSON Lines record)."""
    try:
        return loads_bounded(text, settings.JSON_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise IngestError(f"invalid JSON: {exc.msg} (column {exc.colno})", line=line or exc.lineno) from None
    except JsonTooDeep as exc:
        raise IngestError(exc.reason, line=line or exc.line) from None


class JsonAdapter:
    name = "json"
    extensions = (".json",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        mapping = field_mapping(options)
        data = load_json(text)
        if isinstance(data, dict) and "documents" in data:
            data = data["documents"]
        elif isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or not data:
            raise IngestError("expected a non-empty array of objects", field="documents")
        for index, record in enumerate(data):
            try:
                yield record_to_document(
                    record,
                    mapping,
                    filename=filename,
                    line=None,
                    max_chars=options["max_chars"],
                    provenance_key="record",
                    position=index,
                )
            except IngestError as exc:
                # Name the record: a JSON array has no useful line numbers once parsed.
                exc.field = f"[{index}]" + (f".{exc.field}" if exc.field else "")
                raise


class JsonLinesAdapter:
    name = "jsonl"
    extensions = (".jsonl", ".ndjson")

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        mapping = field_mapping(options)
        count = 0
        # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085, \x0c ..., which
        # JSON allows raw inside strings, and would cut valid records apart.
        for number, raw in enumerate(text.split("\n"), start=1):
            if not raw.strip():
                continue
            record = load_json(raw, line=number)
            count += 1
            yield record_to_document(record, mapping, filename=filename, line=number, max_chars=options["max_chars"])
        if count == 0:
            raise IngestError("no JSON lines", line=1)
