"""Documents: the document mapping over the records of sources.ingest.readers.

One mapping, ``record_to_document`` (a record's fields named by ``options["mapping"]``: text,
title, url, published; the rest kept as metadata), serves CSV, JSON and JSON Lines. Three
formats read their records otherwise, here and not in a parser of their own:

- text and markdown: the whole file is the text; a leading "# Heading" is the title;
- XML: the records are <document>, <article>, <item> or <entry> elements at any depth (else
  the root), read by their named children (<text> or <body>, <content>, <description>,
  <summary>; <title>/<headline>; <url>/<link> (a link's href); <published>, <date>,
  <pubDate>, <updated>), each element's whole text, inline markup included; the record is
  named ``document[0]`` (its tag, its position);
- JSON-LD (schema.org Article and kin): the nodes with an articleBody, text, description or
  abstract, headline or name as the title, author's name, ``node[0]`` counting only those.

Each format is an Adapter (sources.ingest.base): ``parse`` yields ParsedDocuments; an error
names the file and the line or record and the field, and rejects the file whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import Any
from xml.etree.ElementTree import Element

from sources.ingest.base import (
    DOCUMENT_ADAPTERS,
    IngestError,
    ParsedDocument,
    optional_str,
    optional_url,
    parse_published,
    require_text,
)
from sources.ingest.readers import (
    Location,
    Record,
    local_name,
    read_csv,
    read_json,
    read_jsonl,
    read_jsonld,
    read_text,
    xml_records,
)
from sources.links import http_url

# --- the mapping: record -> ParsedDocument ---------------------------------------------------

DEFAULT_FIELDS = {"text": "text", "title": "title", "url": "url", "published": "published"}


def field_mapping(options: Mapping[str, Any]) -> dict[str, str]:
    """The record fields holding text, title, url and published (``options["mapping"]``)."""
    mapping = dict(DEFAULT_FIELDS)
    custom = options.get("mapping") or {}
    unknown = set(custom) - set(DEFAULT_FIELDS)
    if unknown:
        raise IngestError(f"unknown mapping keys {sorted(unknown)}; allowed: {sorted(DEFAULT_FIELDS)}")
    mapping.update({k: str(v) for k, v in custom.items()})
    return mapping


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def record_to_document(record: Record, mapping: Mapping[str, str], *, max_chars: int) -> ParsedDocument:
    """One record as a document; an error names the record's line or position and the field."""
    fields = record.fields
    try:
        used = {mapping["text"], mapping["title"], mapping["url"], mapping["published"]}
        text_field = mapping["text"]
        if text_field not in fields:
            raise IngestError("missing", field=text_field)
        metadata = {k: v for k, v in fields.items() if k not in used}
        for key, value in metadata.items():
            if _has_nul(key) or _has_nul(value):  # PostgreSQL jsonb cannot hold NUL
                raise IngestError("contains a NUL character", field=key.replace("\x00", "\\u0000"))
        return ParsedDocument(
            text=require_text(fields[text_field], field_name=text_field, max_chars=max_chars),
            title=optional_str(fields.get(mapping["title"]), line=None, field_name=mapping["title"], max_chars=500),
            url=optional_url(fields.get(mapping["url"]), line=None, field_name=mapping["url"]),
            published_at=parse_published(fields.get(mapping["published"]), field_name=mapping["published"]),
            metadata=metadata,
            provenance={**record.location.provenance()},
        )
    except IngestError as exc:
        raise record.location.locate(exc) from None


def _mapped(records: Iterable[Record], options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
    mapping = field_mapping(options)
    for record in records:
        yield record_to_document(record, mapping, max_chars=options["max_chars"])


# --- text and markdown -------------------------------------------------------------------

# A markdown ATX heading: 1-6 '#' then a space ("#hashtag" or "#!/bin/sh" is not a heading).
_ATX_HEADING = re.compile(r"#{1,6}[ \t]+(.*?)[ \t#]*$")


@DOCUMENT_ADAPTERS.register("text")
class TextAdapter:
    name = "text"
    extensions: tuple[str, ...] = (".txt", ".md", ".markdown", ".text")

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        for record in read_text(text, filename=filename):
            # The record is the whole file: an error names the field, not a line.
            body = require_text(record.fields["text"], field_name="text", max_chars=options["max_chars"])
            title = PurePath(filename).stem
            first, _, rest = body.partition("\n")
            heading = _ATX_HEADING.match(first)
            if heading and rest.strip():
                title = heading.group(1).strip() or title
            yield ParsedDocument(text=body, title=title, provenance={**record.location.provenance()})


# --- CSV, JSON, JSON Lines: the field mapping ------------------------------------------------


@DOCUMENT_ADAPTERS.register("csv")
class CsvAdapter:
    """CSV with a header row; columns mapped to text/title/url/published (options["mapping"])."""

    name = "csv"
    extensions: tuple[str, ...] = (".csv",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        text_column = field_mapping(options)["text"]

        def check_header(header: list[str]) -> None:
            if text_column not in header:
                raise IngestError(f"no '{text_column}' column in the header {header}", line=1, field=text_column)

        return _mapped(read_csv(text, filename=filename, check_header=check_header), options)


def _document_array(data: Any) -> Sequence[Any]:
    """An array of objects, the array under "documents", or one object."""
    if isinstance(data, dict) and "documents" in data:
        data = data["documents"]
    elif isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise IngestError("expected a non-empty array of objects", field="documents")
    return data


@DOCUMENT_ADAPTERS.register("json")
class JsonAdapter:
    """JSON: an array of objects, or {"documents": [...]}, or one object."""

    name = "json"
    extensions: tuple[str, ...] = (".json",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        return _mapped(read_json(text, filename=filename, select=_document_array), options)


@DOCUMENT_ADAPTERS.register("jsonl")
class JsonLinesAdapter:
    name = "jsonl"
    extensions: tuple[str, ...] = (".jsonl", ".ndjson")

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        return _mapped(read_jsonl(text, filename=filename), options)


# --- XML: named children -----------------------------------------------------------------

RECORD_TAGS = ("document", "article", "item", "entry")
TEXT_TAGS = ("text", "body", "content", "description", "summary")
TITLE_TAGS = ("title", "headline")
URL_TAGS = ("url", "link")
DATE_TAGS = ("published", "date", "pubDate", "updated")


def _child_text(element: Element, names: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The first child named one of ``names``: its name and its whole text (a link's href
    when it has no text)."""
    for child in element:
        name = local_name(child.tag)
        if name in names:
            if name == "link" and not (child.text or "").strip():
                return name, child.get("href", "")
            return name, "".join(child.itertext())
    return None, None


@DOCUMENT_ADAPTERS.register("xml")
class XmlAdapter:
    """XML (defusedxml): <document>, <article>, <item> or <entry> records, read by their children."""

    name = "xml"
    extensions: tuple[str, ...] = (".xml",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        for location, record in xml_records(text, filename=filename, tags=RECORD_TAGS, root_if_none=True):
            # Documents name a record by its tag and its position among all records.
            where = f"{record.name}[{location.record}]"
            at = replace(location, label=where)
            element = record.element
            text_tag, body = _child_text(element, TEXT_TAGS)
            if text_tag is None:
                raise at.error("no <text> element")
            _, title = _child_text(element, TITLE_TAGS)
            url_tag, url = _child_text(element, URL_TAGS)
            date_tag, date = _child_text(element, DATE_TAGS)
            try:
                yield ParsedDocument(
                    text=require_text(body, field_name=text_tag, max_chars=options["max_chars"]),
                    title=optional_str(title, line=None, field_name="title", max_chars=500),
                    url=optional_url(url, line=None, field_name=str(url_tag)),
                    published_at=parse_published(date, field_name=str(date_tag)),
                    metadata={"id": element.get("id")} if element.get("id") else {},
                    provenance={"file": filename, "element": where},
                )
            except IngestError as exc:
                raise at.locate(exc) from None


# --- JSON-LD: schema.org keys -------------------------------------------------------------

TEXT_KEYS = ("articleBody", "text", "description", "abstract")
TITLE_KEYS = ("headline", "name")


def _first(node: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in node:
            return key, node[key]
    return None, None


def _author(node: Mapping[str, Any]) -> str:
    author = node.get("author")
    if isinstance(author, list):
        author = author[0] if author else None
    if isinstance(author, dict):
        return str(author.get("name", ""))
    return str(author) if isinstance(author, str) else ""


@DOCUMENT_ADAPTERS.register("jsonld")
class JsonLdAdapter:
    """JSON-LD (schema.org Article, NewsArticle, CreativeWork, ...), including @graph."""

    name = "jsonld"
    extensions: tuple[str, ...] = (".jsonld",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        articles = [
            record
            for record in read_jsonld(text, filename=filename, skip_non_objects=True)
            if _first(record.fields, TEXT_KEYS)[0]
        ]
        if not articles:
            raise IngestError("no node with articleBody, text or description", field="@graph")
        for index, record in enumerate(articles):
            # Documents count only the nodes that are articles: node[0] is the first of them.
            at = replace(record.location, record=index, label=f"node[{index}]")
            yield self._document(record.fields, at, max_chars=options["max_chars"])

    @staticmethod
    def _document(node: Mapping[str, Any], at: Location, *, max_chars: int) -> ParsedDocument:
        text_key, body = _first(node, TEXT_KEYS)
        _, title = _first(node, TITLE_KEYS)
        try:
            return ParsedDocument(
                text=require_text(body, field_name=str(text_key), max_chars=max_chars),
                title=optional_str(title, line=None, field_name="headline", max_chars=500),
                # "url" must be an http(s) URL; "@id" is an identifier (often a URN or a blank
                # node) and only serves as the link when it is one.
                url=optional_url(node.get("url"), line=None, field_name="url") or http_url(node.get("@id")),
                published_at=parse_published(node.get("datePublished"), field_name="datePublished"),
                metadata={
                    k: v
                    for k, v in {
                        "@type": node.get("@type", ""),
                        "author": _author(node),
                        "publisher": node.get("publisher"),
                    }.items()
                    if v
                },
                provenance={"file": at.file, "node": at.record},
            )
        except IngestError as exc:
            raise at.locate(exc) from None
