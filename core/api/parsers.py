"""Body parsers that refuse an oversized request with 413 before reading all of it, JSON
nested deeper than JSON_MAX_DEPTH and multipart uploads with too many files or fields with
400 (the API's JSON error envelope, never an HTML page or a RecursionError)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent, TooManyFilesSent
from django.core.files.uploadedfile import UploadedFile
from django.utils.datastructures import MultiValueDict
from rest_framework.parsers import DataAndFiles, JSONParser, MultiPartParser

from core.engine.jsondepth import json_depth_error
from core.engine.types import JSONValue

if TYPE_CHECKING:
    from django.http.request import _ImmutableQueryDict  # a stub-only alias

# core.api.exceptions is imported inside the parsers: it imports rest_framework.views, whose
# APIView reads DEFAULT_PARSER_CLASSES (this module) while it is being defined.


def json_limit() -> int:
    """JSON bodies carry at most one upload's worth of documents."""
    return int(getattr(settings, "API_MAX_JSON_BYTES", settings.INGEST_MAX_FILE_BYTES))


def upload_limit() -> int:
    """A multipart upload: a handful of files at the per-file limit."""
    return int(getattr(settings, "API_MAX_UPLOAD_BYTES", 4 * settings.INGEST_MAX_FILE_BYTES))


def json_max_depth() -> int:
    """How deeply a JSON body may nest arrays and objects (JSON_MAX_DEPTH)."""
    return int(getattr(settings, "JSON_MAX_DEPTH", 64))


def _declared_length(parser_context: Mapping[str, object] | None) -> int:
    meta = getattr((parser_context or {}).get("request"), "META", None)  # the request's headers, a dict
    try:
        return int(meta.get("CONTENT_LENGTH") or 0) if isinstance(meta, dict) else 0
    except ValueError:
        return 0


class LimitedJSONParser(JSONParser):
    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping[str, object] | None = None
    ) -> dict[str, JSONValue]:  # the stubs' return type: JSON before validation, whatever its shape
        from core.api.exceptions import PayloadTooLarge, json_too_deep

        limit = json_limit()
        if _declared_length(parser_context) > limit:
            raise PayloadTooLarge(f"The JSON body is over the limit of {limit} bytes.")
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise PayloadTooLarge(f"The JSON body is over the limit of {limit} bytes.")
        encoding = str((parser_context or {}).get("encoding", settings.DEFAULT_CHARSET))
        text: str | bytes = data  # UTF-8 bytes are scanned as they are
        if encoding.lower().replace("-", "").replace("_", "") != "utf8":
            with contextlib.suppress(LookupError, UnicodeDecodeError):  # the parser reports those
                text = data.decode(encoding)
        too_deep = json_depth_error(text, json_max_depth())
        if too_deep is not None:
            raise json_too_deep(too_deep)
        try:
            return super().parse(io.BytesIO(data), media_type, parser_context)
        except RecursionError:  # the scan above should make this unreachable
            raise json_too_deep(None) from None


class LimitedMultiPartParser(MultiPartParser):
    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping[str, object] | None = None
    ) -> DataAndFiles[_ImmutableQueryDict, MultiValueDict[str, UploadedFile]]:
        from core.api.exceptions import PayloadTooLarge, TooManyParts

        limit = upload_limit()
        if _declared_length(parser_context) > limit:
            raise PayloadTooLarge(f"The upload is over the limit of {limit} bytes.")
        try:
            return super().parse(stream, media_type, parser_context)
        except (TooManyFilesSent, TooManyFieldsSent) as exc:
            # Django raises these before DRF sees the body; unhandled they are an HTML 400.
            raise TooManyParts.from_django(exc) from None
