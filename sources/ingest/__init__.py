"""Ingestion: one reader per file format (sources.ingest.readers), and two mappings over
the records it gives: documents (sources.ingest.document_formats, the Adapter contract of
sources.ingest.base) and claims (sources.ingest.claim_formats)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from sources.ingest import document_formats  # noqa: F401  (registers the document formats)
from sources.ingest.base import DOCUMENT_ADAPTERS, Adapter, IngestError, ParsedDocument
from sources.ingest.readers import check_size, decode_text, decode_utf8

SUPPORTED_EXTENSIONS = DOCUMENT_ADAPTERS.extensions()
DOCUMENT_FORMATS = DOCUMENT_ADAPTERS.format_names()

__all__ = [
    "DOCUMENT_ADAPTERS",
    "DOCUMENT_FORMATS",
    "IngestError",
    "ParsedDocument",
    "SUPPORTED_EXTENSIONS",
    "adapter_for",
    "decode_utf8",
    "parse_bytes",
    "expand_paths",
    "read_limited",
]


def adapter_for(filename: str, format_name: str | None = None) -> Adapter:
    return DOCUMENT_ADAPTERS.for_file(filename, format_name)


def parse_bytes(data: bytes, filename: str, options: Mapping[str, Any] | None = None) -> list[ParsedDocument]:
    """Parse one whole file; any problem raises IngestError and nothing is returned."""
    opts = dict(options or {})
    opts.setdefault("max_chars", settings.INGEST_MAX_DOCUMENT_CHARS)
    check_size(data, filename)
    adapter = adapter_for(filename, opts.get("format"))
    text = decode_text(data, filename)
    try:
        return list(adapter.parse(text, filename=filename, options=opts))
    except IngestError as exc:
        raise exc.located(filename) from None
    except RecursionError:
        # Defensive: JSON depth is bounded before parsing, but no input may crash a batch.
        raise IngestError("nested too deeply to parse", filename=filename) from None


def read_limited(path: Path) -> bytes:
    limit = settings.INGEST_MAX_FILE_BYTES
    size = path.stat().st_size
    if size > limit:
        raise IngestError(f"file is {size} bytes, over the limit of {limit}", filename=path.name)
    return path.read_bytes()


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, folders walked for supported extensions (sorted, so runs repeat)."""
    result: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            result.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS)
            )
        elif path.is_file():
            result.append(path)
        else:
            raise IngestError("no such file or folder", filename=str(path))
    return result
