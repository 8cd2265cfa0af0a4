"""XML, parsed with defusedxml: DTDs, entities and external references are refused.

Shape: any root holding <document> (or <article>, <item>) elements, each with <text>
(or <body>, <content>, <description>), optional <title>, <url>/<link>, <published>/<date>.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from sources.ingest.base import (
    IngestError,
    ParsedDocument,
    optional_str,
    optional_url,
    parse_published,
    require_text,
)

RECORD_TAGS = ("document", "article", "item", "entry")
TEXT_TAGS = ("text", "body", "content", "description", "summary")
TITLE_TAGS = ("title", "headline")
URL_TAGS = ("url", "link")
DATE_TAGS = ("published", "date", "pubDate", "updated")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child_text(element: Element, names: tuple[str, ...]) -> tuple[str | None, str | None]:
    for child in element:
        name = _local(child.tag)
        if name in names:
            if name == "link" and not (child.text or "").strip():
                return name, child.get("href", "")
            return name, "".join(child.itertext())
    return None, None


class XmlAdapter:
    name = "xml"
    extensions = (".xml",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        try:
            root = fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
        except DefusedXmlException as exc:
            raise IngestError(f"refused unsafe XML ({type(exc).__name__}): DTDs and entities are not allowed") from None
        except ParseError as exc:
            line, column = exc.position
            raise IngestError(
                f"malformed XML: {exc.msg if hasattr(exc, 'msg') else exc} (column {column})", line=line
            ) from None
        records = [el for el in root.iter() if _local(el.tag) in RECORD_TAGS]
        if not records:
            records = [root]
        for index, record in enumerate(records):
            where = f"{_local(record.tag)}[{index}]"
            text_tag, body = _child_text(record, TEXT_TAGS)
            if text_tag is None:
                raise IngestError("no <text> element", field=where)
            _, title = _child_text(record, TITLE_TAGS)
            url_tag, url = _child_text(record, URL_TAGS)
            date_tag, date = _child_text(record, DATE_TAGS)
            yield ParsedDocument(
                text=require_text(body, field_name=f"{where}/{text_tag}", max_chars=options["max_chars"]),
                title=optional_str(title, line=None, field_name=f"{where}/title", max_chars=500),
                url=optional_url(url, line=None, field_name=f"{where}/{url_tag}"),
                published_at=parse_published(date, field_name=f"{where}/{date_tag}"),
                metadata={"id": record.get("id")} if record.get("id") else {},
                provenance={"file": filename, "element": where},
            )
