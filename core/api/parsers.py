"""Body parsers that refuse an oversized request with 413 before reading all of it."""

from __future__ import annotations

import io
from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser, MultiPartParser

from core.api.exceptions import PayloadTooLarge


def json_limit() -> int:
    """JSON bodies carry at most one upload's worth of documents."""
    return int(getattr(settings, "API_MAX_JSON_BYTES", settings.INGEST_MAX_FILE_BYTES))


def upload_limit() -> int:
    """A multipart upload: a handful of files at the per-file limit."""
    return int(getattr(settings, "API_MAX_UPLOAD_BYTES", 4 * settings.INGEST_MAX_FILE_BYTES))


def _declared_length(parser_context: Any) -> int:
    request = (parser_context or {}).get("request")
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
    except ValueError:
        return 0


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = json_limit()
        if _declared_length(parser_context) > limit:
            raise PayloadTooLarge(f"The JSON body is over the limit of {limit} bytes.")
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise PayloadTooLarge(f"The JSON body is over the limit of {limit} bytes.")
        return super().parse(io.BytesIO(data), media_type, parser_context)


class LimitedMultiPartParser(MultiPartParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = upload_limit()
        if _declared_length(parser_context) > limit:
            raise PayloadTooLarge(f"The upload is over the limit of {limit} bytes.")
        return super().parse(stream, media_type, parser_context)
