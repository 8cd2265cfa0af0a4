"""JSON-LD (schema.org Article, NewsArticle, CreativeWork, ...), including @graph."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sources.ingest.base import (
    IngestError,
    ParsedDocument,
    optional_str,
    optional_url,
    parse_published,
    require_text,
)
from sources.ingest.json_adapter import load_json
from sources.links import http_url

TEXT_KEYS = ("articleBody", "text", "description", "abstract")
TITLE_KEYS = ("headline", "name")


def _nodes(data: Any) -> list[Any]:
    if isinstance(data, list):
        return [node for item in data for node in _nodes(item)]
    if isinstance(data, dict) and "@graph" in data:
        return _nodes(data["@graph"])
    return [data]


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


class JsonLdAdapter:
    name = "jsonld"
    extensions = (".jsonld",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        nodes = [n for n in _nodes(load_json(text)) if isinstance(n, dict) and _first(n, TEXT_KEYS)[0]]
        if not nodes:
            raise IngestError("no node with articleBody, text or description", field="@graph")
        for index, node in enumerate(nodes):
            where = f"node[{index}]"
            text_key, body = _first(node, TEXT_KEYS)
            _, title = _first(node, TITLE_KEYS)
            node_type = node.get("@type", "")
            yield ParsedDocument(
                text=require_text(body, field_name=f"{where}.{text_key}", max_chars=options["max_chars"]),
                title=optional_str(title, line=None, field_name=f"{where}.headline", max_chars=500),
                # "url" must be an http(s) URL; "@id" is an identifier (often a URN or a blank
                # node) and only serves as the link when it is one.
                url=optional_url(node.get("url"), line=None, field_name=f"{where}.url") or http_url(node.get("@id")),
                published_at=parse_published(node.get("datePublished"), field_name=f"{where}.datePublished"),
                metadata={
                    k: v
                    for k, v in {
                        "@type": node_type,
                        "author": _author(node),
                        "publisher": node.get("publisher"),
                    }.items()
                    if v
                },
                provenance={"file": filename, "node": index},
            )
