"""Plain text and markdown: one document per file; a leading '# Heading' is the title."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import PurePath
from typing import Any

from sources.ingest.base import ParsedDocument, require_text

# A markdown ATX heading: 1-6 '#' then a space ("#hashtag" or "#!/bin/sh" is not a heading).
_ATX_HEADING = re.compile(r"#{1,6}[ \t]+(.*?)[ \t#]*$")


class TextAdapter:
    name = "text"
    extensions = (".txt", ".md", ".markdown", ".text")

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        body = require_text(text, field_name="text", max_chars=options["max_chars"])
        title = PurePath(filename).stem
        first, _, rest = body.partition("\n")
        heading = _ATX_HEADING.match(first)
        if heading and rest.strip():
            title = heading.group(1).strip() or title
        yield ParsedDocument(text=body, title=title, provenance={"file": filename, "line": 1})
