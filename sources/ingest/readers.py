"""One reader per file format: the file's records, each a (Location, mapping) Record.

Documents (sources.ingest.document_formats) and claims (sources.ingest.claim_formats) are two mappings
over the records these readers give; neither parses a file itself. A reader checks what
makes a file unreadable as a whole (malformed CSV, JSON or XML, unsafe XML, too deep, no
rows) and raises IngestError naming the line, record or element; a Location names where a
record is, once, for both mappings: ``location.error(reason, field)`` is the one way an
error about a record's field is worded (CSV, TSV, JSON Lines: the line; JSON: ``[3].field``;
JSON-LD: ``node[3].field``; XML: ``/root/name[1]/field``).

Formats: CSV and TSV (a header row, or the caller's column names), JSON (the records are
what the caller's ``select`` picks from the parsed file), JSON Lines (one object per line),
JSON-LD (the nodes of ``@graph``, nested graphs and lists flattened), XML (parsed only with
defusedxml: no DTD, entities or external references; each record element is an XmlRecord,
a mapping of its attributes and children built on first read, under a depth and an element
budget), and plain text (one record, the whole file).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring
from django.conf import settings

from core.engine.jsondepth import JsonTooDeep, loads_bounded
from sources.ingest.base import IngestError

__all__ = [
    "MAX_RECORD_ELEMENTS",
    "Location",
    "Record",
    "XmlRecord",
    "check_size",
    "decode_text",
    "decode_utf8",
    "load_json",
    "local_name",
    "read_csv",
    "read_json",
    "read_jsonld",
    "read_jsonl",
    "read_text",
    "read_tsv",
    "read_xml",
    "xml_records",
]


@dataclass(frozen=True)
class Location:
    """Where one record is in its file.

    ``line``: the line a CSV, TSV or JSON Lines record starts on; ``record``: its position
    among the file's records (JSON, JSON-LD, XML); ``path``: an XML record element's path;
    ``id``: a JSON-LD node's ``@id``. ``label`` is how an error names a record that has no
    line ("[3]", "node[3]", the XML path), ``sep`` what joins a field to it."""

    file: str
    line: int | None = None
    record: int | None = None
    path: str | None = None
    id: str | None = None
    label: str = ""
    sep: str = "."

    def provenance(self) -> dict[str, str | int]:
        """The file, and the line, record, path and id that are known (what a claim or a
        document stores of where it came from)."""
        known = {"line": self.line, "record": self.record, "path": self.path, "id": self.id}
        return {"file": self.file} | {key: value for key, value in known.items() if value is not None}

    def field(self, name: str | None) -> str | None:
        """A field of this record as errors name it: ``[3].text``, ``/feed/item[1]/title``."""
        if not self.label:
            return name
        return self.label + (f"{self.sep}{name}" if name else "")

    def error(self, reason: str, field: str | None = None) -> IngestError:
        return IngestError(reason, filename=self.file, line=self.line, field=self.field(field))

    def locate(self, exc: IngestError) -> IngestError:
        """An error raised about a field of this record, named as coming from it."""
        exc.filename = exc.filename or self.file
        exc.line = self.line if exc.line is None else exc.line
        exc.field = self.field(exc.field)
        exc.args = (exc.describe(),)
        return exc


class Record(NamedTuple):
    location: Location
    fields: Mapping[str, Any]


def _not_an_object(location: Location, value: object) -> IngestError:
    return location.error(f"expected an object, got {type(value).__name__}")


# --- bytes to text ----------------------------------------------------------------------


def check_size(data: bytes, filename: str) -> None:
    limit = settings.INGEST_MAX_FILE_BYTES
    if len(data) > limit:
        raise IngestError(f"file is {len(data)} bytes, over the limit of {limit}", filename=filename)


def decode_utf8(data: bytes, filename: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(f"not valid UTF-8 (byte {exc.start})", filename=filename, line=line) from None


def decode_text(data: bytes, filename: str) -> str:
    """The file as text: UTF-8 (a BOM dropped), no NUL character."""
    text = decode_utf8(data, filename)
    if "\x00" in text:
        raise IngestError("contains NUL characters (binary file?)", filename=filename)
    return text


# --- plain text ----------------------------------------------------------------------------


def read_text(text: str, *, filename: str) -> Iterator[Record]:
    """A text file is one record, its whole text, at line 1."""
    yield Record(Location(filename, line=1), {"text": text})


# --- CSV and TSV --------------------------------------------------------------------------


class _Rows(Protocol):
    """A csv.reader: rows, and the number of lines read so far."""

    line_num: int

    def __next__(self) -> list[str]: ...


def _read_table(
    rows: _Rows,
    kind: str,
    *,
    filename: str,
    columns: Sequence[str] | None,
    check_header: Callable[[list[str]], None] | None,
) -> Iterator[Record]:
    header: list[str]
    if columns:
        header = list(columns)
    else:
        try:
            header = [h.strip() for h in next(rows)]
        except StopIteration:
            raise IngestError("empty file: no header row", line=1) from None
        except csv.Error as exc:
            raise IngestError(f"malformed {kind}: {exc}", line=1) from None
    if check_header is not None:
        check_header(header)
    count = 0
    while True:
        # A quoted record may span lines: name the line it starts on, not the line the reader
        # stopped at (for an unterminated quote that is the end of the file).
        line = rows.line_num + 1
        try:
            row = next(rows)
        except StopIteration:
            break
        except csv.Error as exc:
            raise IngestError(f"malformed {kind}: {exc}", line=line) from None
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise IngestError(f"expected {len(header)} columns, found {len(row)}", line=line)
        count += 1
        yield Record(Location(filename, line=line), dict(zip(header, row, strict=True)))
    if count == 0:
        raise IngestError("no data rows", line=1)


def read_csv(
    text: str,
    *,
    filename: str,
    columns: Sequence[str] | None = None,
    check_header: Callable[[list[str]], None] | None = None,
) -> Iterator[Record]:
    """Rows as {column: cell}: the header row names the columns, unless ``columns`` does (a
    headerless file). ``check_header`` (the mapping's) may refuse the columns before any row."""
    rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    return _read_table(rows, "CSV", filename=filename, columns=columns, check_header=check_header)


def read_tsv(
    text: str,
    *,
    filename: str,
    columns: Sequence[str] | None = None,
    check_header: Callable[[list[str]], None] | None = None,
) -> Iterator[Record]:
    """Tab-separated without quoting, as core.bench.truth.read_records reads the Books file."""
    rows = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE, strict=True)
    return _read_table(rows, "TSV", filename=filename, columns=columns, check_header=check_header)


# --- JSON, JSON Lines, JSON-LD ----------------------------------------------------------


def load_json(text: str, *, line: int | None = None) -> Any:
    """Parse JSON whose nesting is bounded by JSON_MAX_DEPTH; any problem is an IngestError
    with the line at fault (``line`` numbers a JSON Lines record)."""
    try:
        return loads_bounded(text, settings.JSON_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise IngestError(f"invalid JSON: {exc.msg} (column {exc.colno})", line=line or exc.lineno) from None
    except JsonTooDeep as exc:
        raise IngestError(exc.reason, line=line or exc.line) from None


def read_json(text: str, *, filename: str, select: Callable[[Any], Sequence[Any]]) -> Iterator[Record]:
    """The objects ``select`` picks from the parsed file (the mapping's rule: which array
    holds the records), each named by its position: ``[3]``."""
    for index, value in enumerate(select(load_json(text))):
        location = Location(filename, record=index, label=f"[{index}]")
        if not isinstance(value, Mapping):
            raise _not_an_object(location, value)
        yield Record(location, value)


def read_jsonl(text: str, *, filename: str) -> Iterator[Record]:
    """One object per non-blank line, named by its line."""
    count = 0
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085, \x0c ..., which
    # JSON allows raw inside strings, and would cut valid records apart.
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        value = load_json(raw, line=number)
        count += 1
        location = Location(filename, line=number)
        if not isinstance(value, Mapping):
            raise _not_an_object(location, value)
        yield Record(location, value)
    if count == 0:
        raise IngestError("no JSON lines", line=1)


def _ld_nodes(data: Any) -> list[Any]:
    if isinstance(data, list):
        return [node for item in data for node in _ld_nodes(item)]
    if isinstance(data, Mapping) and "@graph" in data:
        return _ld_nodes(data["@graph"])
    return [data]


def read_jsonld(
    text: str,
    *,
    filename: str,
    select: Callable[[Any], Any] | None = None,
    skip_non_objects: bool = False,
) -> Iterator[Record]:
    """The nodes of the file (of what ``select`` picks from it): ``@graph`` and lists
    flattened, keys as given, each named ``node[i]`` with its ``@id`` when that is a string.
    A node that is not an object is refused, or passed over (not counted) when
    ``skip_non_objects``. No node at all is for the caller to judge."""
    data = load_json(text)
    index = 0
    for node in _ld_nodes(select(data) if select else data):
        label = f"node[{index}]"
        if not isinstance(node, Mapping):
            if skip_non_objects:
                continue
            raise _not_an_object(Location(filename, record=index, label=label), node)
        node_id = node.get("@id")
        node_id = node_id[:500] if isinstance(node_id, str) else None
        yield Record(Location(filename, record=index, id=node_id, label=label), node)
        index += 1


# --- XML ------------------------------------------------------------------------------


def local_name(tag: object) -> str:
    """An element's tag without its namespace: "{http://...}item" -> "item"."""
    return str(tag).rsplit("}", 1)[-1]


# Elements one XML record may hold, its descendants included, once read as a mapping. A
# record yields one subject's claims (at most a few hundred attributes, values bounded by
# MAX_VALUE_CHARS), so more is not a record but a flood (100,000 repeated tags in one element
# once took 31 s of CPU).
MAX_RECORD_ELEMENTS = 10_000


class _Budget:
    """Elements left to read in one record; IngestError naming the limit once spent."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise IngestError(f"an XML record holds more than {self.limit} elements (the limit per record)")


def _element_fields(element: Element, depth: int, limit: int, budget: _Budget) -> dict[str, Any]:
    """An element as a dict: attributes, then children (leaf by text, else nested; repeats as lists).

    Linear in the element's size: a repeated tag's values are appended to one list (never
    copied per repeat), and every element is counted against ``budget``."""
    if depth > limit:
        raise IngestError(f"XML nested deeper than {limit} levels (JSON_MAX_DEPTH)")
    fields: dict[str, Any] = {local_name(k): v for k, v in element.attrib.items()}
    repeated: set[str] = set()  # names whose value is a list built here (attributes are text)
    for child in element:
        if not isinstance(child.tag, str):  # comments, processing instructions
            continue
        budget.spend()
        name = local_name(child.tag)
        has_children = any(isinstance(c.tag, str) for c in child)
        value: Any = (
            _element_fields(child, depth + 1, limit, budget) if has_children else "".join(child.itertext()).strip()
        )
        if name in repeated:
            fields[name].append(value)
        elif name in fields:
            fields[name] = [fields[name], value]
            repeated.add(name)
        else:
            fields[name] = value
    return fields


class XmlRecord(Mapping[str, Any]):
    """One record element, read as a mapping: its attributes and its children (a leaf child
    by its text, a child with children as a nested mapping, a repeated tag as a list).

    The mapping is built on first read, under JSON_MAX_DEPTH levels and MAX_RECORD_ELEMENTS
    elements (IngestError past either). ``element`` stays at hand for a reading that needs
    what the mapping leaves out (an element's whole text with its inline markup, a leaf's
    attributes): the documents' named children."""

    def __init__(self, element: Element) -> None:
        self.element = element
        self.name = local_name(element.tag)
        self._fields: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._fields is None:
            self._fields = _element_fields(self.element, 1, settings.JSON_MAX_DEPTH, _Budget(MAX_RECORD_ELEMENTS))
        return self._fields

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return f"XmlRecord(<{self.name}>)"


def _parse_xml(text: str) -> Element:
    try:
        root: Element = fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise IngestError(f"refused unsafe XML ({type(exc).__name__}): DTDs and entities are not allowed") from None
    except ParseError as exc:
        line, column = exc.position
        raise IngestError(f"malformed XML: {getattr(exc, 'msg', exc)} (column {column})", line=line) from None
    return root


def xml_records(
    text: str, *, filename: str, tags: Collection[str] | None = None, root_if_none: bool = False
) -> Iterator[tuple[Location, XmlRecord]]:
    """The record elements: every element (at any depth) whose tag is in ``tags``, or, with
    no tags, the root's children. Finding none is an error, unless ``root_if_none``: then
    the root is the one record. Each is located by its path, ``/root/name[n]`` for the
    root's children and ``//name[n]`` for tagged elements (n counts from 1 per name)."""
    root = _parse_xml(text)
    root_name = local_name(root.tag)
    if tags is not None:
        elements = [el for el in root.iter() if isinstance(el.tag, str) and local_name(el.tag) in tags]
        prefix = "/"
        if not elements and not root_if_none:
            raise IngestError(f"no <{'>, <'.join(sorted(tags))}> element", field="records")
    else:
        elements = [el for el in root if isinstance(el.tag, str)]
        prefix = f"/{root_name}"
        if not elements and not root_if_none:
            raise IngestError(f"<{root_name}> has no child elements to read as records", field=root_name)
    if not elements:
        yield Location(filename, record=0, path=f"/{root_name}", label=f"/{root_name}", sep="/"), XmlRecord(root)
        return
    counts: dict[str, int] = {}
    for index, element in enumerate(elements):
        name = local_name(element.tag)
        counts[name] = counts.get(name, 0) + 1
        path = f"{prefix}/{name}[{counts[name]}]"
        yield Location(filename, record=index, path=path, label=path, sep="/"), XmlRecord(element)


def read_xml(
    text: str, *, filename: str, tags: Collection[str] | None = None, root_if_none: bool = False
) -> Iterator[Record]:
    """The records of ``xml_records``, each an XmlRecord mapping."""
    for location, record in xml_records(text, filename=filename, tags=tags, root_if_none=root_if_none):
        yield Record(location, record)
