"""The contract every ingestion adapter follows.

An adapter turns the bytes of one file into ParsedDocuments, each with provenance (file
and line, record or element). It raises IngestError naming the line or field at fault;
the caller then stores nothing of that file.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Generic, Protocol, TypeGuard, TypeVar

from django.utils.dateparse import parse_date, parse_datetime

from core.engine.registry import Registry
from core.engine.types import JSONObject
from sources.links import HTTP_URL_MESSAGE, MAX_URL_CHARS, is_http_url


class IngestError(ValueError):
    """A file is rejected whole; the message says where and why."""

    def __init__(self, message: str, *, filename: str = "", line: int | None = None, field: str | None = None):
        self.reason = message
        self.filename = filename
        self.line = line
        self.field = field
        super().__init__(self.describe())

    def describe(self) -> str:
        where = self.filename or "input"
        if self.line is not None:
            where += f", line {self.line}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.reason}"

    def located(self, filename: str) -> IngestError:
        self.filename = self.filename or filename
        self.args = (self.describe(),)
        return self


@dataclass
class ParsedDocument:
    text: str
    title: str = ""
    url: str = ""
    published_at: dt.datetime | None = None
    metadata: JSONObject = field(default_factory=dict)
    provenance: JSONObject = field(default_factory=dict)


class FileFormat(Protocol):
    """What every format plug-in declares: its name and the file extensions it reads."""

    name: str
    extensions: tuple[str, ...]


class Adapter(FileFormat, Protocol):
    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]: ...


F = TypeVar("F", bound=FileFormat)


class Formats(Registry[type[F]], Generic[F]):
    """The file formats of one mapping (documents, claims), registered like every plug-in
    family (``@DOCUMENT_FORMATS.register("csv")`` on the class, named as its ``name``) and
    looked up by name or by a file's extension, in one place for both mappings."""

    def __init__(self, kind: str, accepts: Callable[[object], TypeGuard[type[F]]], *, purpose: str = "") -> None:
        super().__init__(kind, accepts)
        self.purpose = purpose  # " for claims": said in the unsupported-extension message

    def add(self, name: str, item: object) -> None:
        if getattr(item, "name", None) != name:
            raise ValueError(f"{self.kind} {name!r} is registered under another name than its own")
        super().add(name, item)

    def format_names(self) -> tuple[str, ...]:
        """In registration order (as forms and messages list them)."""
        return tuple(name for name, _cls in self.items())

    def extensions(self) -> tuple[str, ...]:
        return tuple(ext for _name, cls in self.items() for ext in cls.extensions)

    def for_file(self, filename: str, format_name: str | None = None) -> F:
        """The format named by ``format_name``, else the one for the file's extension;
        IngestError (naming the file) when there is none."""
        names = ", ".join(self.format_names())
        if format_name:
            if format_name not in self:
                raise IngestError(f"unknown {self.kind} {format_name!r}; known: {names}", filename=filename)
            return self.get(format_name)()
        suffix = PurePath(filename).suffix.lower()
        for _name, cls in self.items():
            if suffix in cls.extensions:
                return cls()
        raise IngestError(
            f"unsupported file type {suffix or '(none)'}{self.purpose}; supported: {', '.join(self.extensions())}"
            + (f" (or give the format: {names})" if self.purpose else ""),
            filename=filename,
        )


def parse_published(value: object, *, line: int | None = None, field_name: str = "published") -> dt.datetime | None:
    """ISO dates and datetimes; empty means unknown; anything else is an error."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise IngestError(f"expected an ISO date string, got {type(value).__name__}", line=line, field=field_name)
    text = value.strip()
    parsed: dt.datetime | None
    try:
        parsed = parse_datetime(text)
        if parsed is None:
            day = parse_date(text)
            if day is not None:
                parsed = dt.datetime(day.year, day.month, day.day)
    except ValueError:
        parsed = None
    if parsed is None:
        raise IngestError(f"not an ISO date: {text[:40]!r}", line=line, field=field_name)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed


def require_text(value: object, *, line: int | None = None, field_name: str = "text", max_chars: int) -> str:
    if not isinstance(value, str):
        raise IngestError(
            "missing" if value is None else f"expected a string, got {type(value).__name__}",
            line=line,
            field=field_name,
        )
    text = value.strip()
    if not text:
        raise IngestError("empty text", line=line, field=field_name)
    if "\x00" in text:
        # A JSON "\u0000" escape passes the raw-bytes NUL check; PostgreSQL text refuses it.
        raise IngestError("contains a NUL character", line=line, field=field_name)
    if len(text) > max_chars:
        raise IngestError(f"text longer than {max_chars} characters", line=line, field=field_name)
    return text


def optional_str(value: object, *, line: int | None, field_name: str, max_chars: int = 2000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise IngestError(f"expected a string, got {type(value).__name__}", line=line, field=field_name)
    if len(value) > max_chars:
        raise IngestError(f"longer than {max_chars} characters", line=line, field=field_name)
    if "\x00" in value:
        raise IngestError("contains a NUL character", line=line, field=field_name)
    return value.strip()


def optional_url(value: object, *, line: int | None, field_name: str) -> str:
    """An optional document URL: empty, or an absolute http(s) URL. Anything else (a
    `javascript:` or `data:` URL, a relative path) rejects the record, and so the file."""
    url = optional_str(value, line=line, field_name=field_name, max_chars=MAX_URL_CHARS)
    if url and not is_http_url(url):
        raise IngestError(HTTP_URL_MESSAGE, line=line, field=field_name)
    return url


def _is_document_adapter(item: object) -> TypeGuard[type[Adapter]]:
    return isinstance(item, type) and callable(getattr(item, "parse", None))


# The document formats (sources.ingest.document_formats registers each).
DOCUMENT_ADAPTERS: Formats[Adapter] = Formats("format", _is_document_adapter)
