"""Plain text and markdown: one document per file; a leading '# Heading' is the title."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import PurePath
from typing import Any

from sources.ingest.base import ParsedDocument, require_text


class TextAdapter:
    name = "text"
    extensions = (".txt", ".md", ".markdown", ".text")

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        body = require_text(text, field_name="text", max_chars=options["max_chars"])
        title = PurePath(filename).stem
        first, _, rest = body.partition("\n")
        if first.startswith("#") and rest.strip():
            title = first.lstrip("#").strip() or title
        yield ParsedDocument(text=body, title=title, provenance={"file": filename, "line": 1})
