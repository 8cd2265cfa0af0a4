"""CSV with a header row; columns mapped to text/title/url/published (options["mapping"])."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from typing import Any

from sources.ingest.base import IngestError, ParsedDocument
from sources.ingest.records import field_mapping, record_to_document


class CsvAdapter:
    name = "csv"
    extensions = (".csv",)

    def parse(self, text: str, *, filename: str, options: Mapping[str, Any]) -> Iterator[ParsedDocument]:
        mapping = field_mapping(options)
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        try:
            header = next(reader)
        except StopIteration:
            raise IngestError("empty file: no header row", line=1) from None
        except csv.Error as exc:
            raise IngestError(f"malformed CSV: {exc}", line=reader.line_num) from None
        header = [h.strip() for h in header]
        if mapping["text"] not in header:
            raise IngestError(f"no '{mapping['text']}' column in the header {header}", line=1, field=mapping["text"])
        rows = 0
        while True:
            # A record may span lines (quoted newlines): name the line it starts on, not the
            # line the reader stopped at (for an unterminated quote that is the end of file).
            line = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise IngestError(f"malformed CSV: {exc}", line=line) from None
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise IngestError(f"expected {len(header)} columns, found {len(row)}", line=line)
            rows += 1
            yield record_to_document(
                dict(zip(header, row, strict=False)),
                mapping,
                filename=filename,
                line=line,
                max_chars=options["max_chars"],
            )
        if rows == 0:
            raise IngestError("no data rows", line=1)
