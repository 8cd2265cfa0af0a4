"""Claim adapters: a structured or semi-structured file, read through a claim mapping, to claims.

One small adapter per kind, on the ingestion adapters' contract (sources.ingest.base): it
yields (provenance, record) pairs, a record being what ``ClaimMapping.extract`` reads (a
dict of field -> value, nested for JSON and XML). ``parse_claim_bytes`` runs the mapping
over every record; any problem (undecodable bytes, malformed CSV/JSON/XML, a record the
mapping cannot read, too many claims) raises IngestError naming the line, record or path
and the field, and nothing of the file is returned, so nothing of it is stored.

Kinds (format name: extensions):
- ``csv`` (.csv): a header row names the columns, unless the mapping gives ``columns`` for
  a headerless file;
- ``tsv`` (.tsv): tab-separated, no quoting (csv.QUOTE_NONE), header row or ``columns``
  (the Books listing is a headerless TSV named .txt: give the format "tsv");
- ``json`` (.json): an array of objects; or the array at the mapping's ``records`` dotted
  path; or an object holding the array under "documents", "records", "items" or "data";
  or a single object;
- ``jsonl`` (.jsonl, .ndjson): one object per line;
- ``xml`` (.xml, defusedxml: no DTD, entities or external references): the record elements
  are those whose tag is the mapping's ``records`` (default: the root's children); an
  element becomes a dict of its attributes and its children (a leaf child by its text, a
  child with children as a nested dict, a repeated tag as a list);
- ``jsonld`` (.jsonld): the nodes of ``@graph`` (or of a list of nodes), keys as given,
  {"@value": x} read as x and {"@id": x} as x.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from pathlib import PurePath
from typing import Any, Protocol
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring
from django.conf import settings

from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.claims.types import ExtractedClaim, dedupe_first
from sources.ingest import decode_utf8
from sources.ingest.base import IngestError
from sources.ingest.json_adapter import load_json

Provenance = dict[str, Any]
# Keys of a JSON object that hold its records when the mapping names no `records` path.
JSON_ARRAY_KEYS = ("documents", "records", "items", "data")


class ClaimAdapter(Protocol):
    name: str
    extensions: tuple[str, ...]

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[tuple[Provenance, Any]]:
        """(provenance, record) pairs; provenance names the file and the line, record or path."""
        ...

    def locate(self, provenance: Provenance, exc: MappingError) -> IngestError:
        """The IngestError for a record the mapping could not read, naming where and which field."""
        ...


# --- tabular --------------------------------------------------------------------------


class _Tabular:
    name = "csv"
    extensions: tuple[str, ...] = (".csv",)

    def _reader(self, text: str) -> Iterator[list[str]]:
        return csv.reader(io.StringIO(text, newline=""), strict=True)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[tuple[Provenance, Any]]:
        reader = self._reader(text)
        header: list[str]
        if mapping.columns:
            header = list(mapping.columns)
            where = "columns"
        else:
            try:
                header = [h.strip() for h in next(reader)]
            except StopIteration:
                raise IngestError("empty file: no header row", line=1) from None
            except csv.Error as exc:
                raise IngestError(f"malformed {self.name.upper()}: {exc}", line=1) from None
            where = "header"
        try:
            mapping.check_header(header)
        except MappingError as exc:
            raise IngestError(
                f"{exc.reason} ({where})", line=1 if where == "header" else None, field=exc.field
            ) from None
        rows = 0
        while True:
            # A quoted record may span lines: name the line it starts on.
            line = getattr(reader, "line_num", 0) + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise IngestError(f"malformed {self.name.upper()}: {exc}", line=line) from None
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise IngestError(f"expected {len(header)} columns, found {len(row)}", line=line)
            rows += 1
            yield {"file": filename, "line": line}, dict(zip(header, row, strict=True))
        if rows == 0:
            raise IngestError("no data rows", line=1)

    def locate(self, provenance: Provenance, exc: MappingError) -> IngestError:
        return IngestError(exc.reason, line=provenance["line"], field=exc.field)


class CsvClaims(_Tabular):
    name = "csv"
    extensions = (".csv",)


class TsvClaims(_Tabular):
    """Tab-separated without quoting, as core.bench.truth.read_records reads the Books file."""

    name = "tsv"
    extensions = (".tsv",)

    def _reader(self, text: str) -> Iterator[list[str]]:
        return csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE, strict=True)


# --- JSON -----------------------------------------------------------------------------


def _at_path(data: Any, path: str) -> Any:
    node = data
    for part in path.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise IngestError(f"no array at the records path {path!r} (stopped at {part!r})", field="records")
    return node


def _record_list(data: Any, mapping: ClaimMapping) -> list[Any]:
    if mapping.records:
        data = _at_path(data, mapping.records)
    elif isinstance(data, Mapping):
        key = next((k for k in JSON_ARRAY_KEYS if isinstance(data.get(k), list)), None)
        data = data[key] if key else [data]
    if not isinstance(data, list) or not data:
        raise IngestError("expected a non-empty array of objects", field=mapping.records or "records")
    return data


class JsonClaims:
    name = "json"
    extensions = (".json",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[tuple[Provenance, Any]]:
        for index, record in enumerate(_record_list(load_json(text), mapping)):
            yield {"file": filename, "record": index}, record

    def locate(self, provenance: Provenance, exc: MappingError) -> IngestError:
        return IngestError(exc.reason, field=f"[{provenance['record']}]" + (f".{exc.field}" if exc.field else ""))


class JsonLinesClaims:
    name = "jsonl"
    extensions = (".jsonl", ".ndjson")

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[tuple[Provenance, Any]]:
        count = 0
        # "\n" only: JSON allows U+2028 and friends raw inside strings (see JsonLinesAdapter).
        for number, raw in enumerate(text.split("\n"), start=1):
            if raw.strip():
                count += 1
                yield {"file": filename, "line": number}, load_json(raw, line=number)
        if count == 0:
            raise IngestError("no JSON lines", line=1)

    def locate(self, provenance: Provenance, exc: MappingError) -> IngestError:
        return IngestError(exc.reason, line=provenance["line"], field=exc.field)


# --- JSON-LD --------------------------------------------------------------------------


def _ld_value(value: Any) -> Any:
    """JSON-LD value objects read as plain values: {"@value": x} -> x, {"@id": x} -> x."""
    if isinstance(value, list):
        return [_ld_value(v) for v in value]
    if isinstance(value, Mapping):
        if "@value" in value:
            return value["@value"]
        if "@id" in value and set(value) <= {"@id", "@type"}:
            return value["@id"]
        return {k: _ld_value(v) for k, v in value.items()}
    return value


def _ld_nodes(data: Any) -> list[Any]:
    if isinstance(data, list):
        return [node for item in data for node in _ld_nodes(item)]
    if isinstance(data, Mapping) and "@graph" in data:
        return _ld_nodes(data["@graph"])
    return [data]


class JsonLdClaims:
    name = "jsonld"
    extensions = (".jsonld",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[tuple[Provenance, Any]]:
        data = load_json(text)
        nodes = _ld_nodes(_at_path(data, mapping.records) if mapping.records else data)
        if not nodes:
            raise IngestError("no nodes", field="@graph")
        for index, node in enumerate(nodes):
            provenance: Provenance = {"file": filename, "record": index}
            if isinstance(node, Mapping) and isinstance(node.get("@id"), str):
                provenance["id"] = node["@id"][:500]
            yield provenance, _ld_value(node)

    def locate(self, provenance: Provenance, exc: MappingError) -> IngestError:
        return IngestError(exc.reason, field=f"node[{provenance['record']}]" + (f".{exc.field}" if exc.field else ""))


# --- XML ------------------------------------------------------------------------------


def _local(tag: Any) -> str:
    return str(tag).rsplit("}", 1)[-1]


# Elements one XML record may hold, its descendants included. A record yields one subject's
# claims (at most a few hundred attributes, values bounded by MAX_VALUE_CHARS), so more is
# not a record but a flood (100,000 repeated tags in one element once took 31 s of CPU).
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


def _element_record(element: Element, depth: int, limit: int, budget: _Budget) -> dict[str, Any]:
    """An element as a dict: attributes, then children (leaf by text, else nested; repeats as lists).

    Linear in the element's size: a repeated tag's values are appended to one list (never
    copied per repeat), and every element is counted against ``budget``."""
    if depth > limit:
        raise IngestError(f"XML nested deeper than {limit} levels (JSON_MAX_DEPTH)")
    record: dict[str, Any] = {_local(k): v for k, v in element.attrib.items()}
    repeated: set[str] = set()  # names whose value is a list built here (attributes are text)
    for child in element:
        if not isinstance(child.tag, str):  # comments, processing instructions
            continue
        budget.spend()
        name = _local(child.tag)
        has_children = any(isinstance(c.tag, str) for c in child)
        value: Any = (
            _element_record(child, depth + 1, limit, budget) if has_children else "".join(child.itertext()).strip()
        )
        if name in repeated:
            record[name].append(value)
        elif name in record:
            record[name] = [record[name], value]
            repeated.add(name)
        else:
            record[name] = value
    return record


class XmlClaims:
    name = "xml"
    extensions = (".xml",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[tuple[Provenance, Any]]:
        try:
            root = fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
        except DefusedXmlException as exc:
            raise IngestError(f"refused unsafe XML ({type(exc).__name__}): DTDs and entities are not allowed") from None
        except ParseError as exc:
            line, column = exc.position
            raise IngestError(f"malformed XML: {getattr(exc, 'msg', exc)} (column {column})", line=line) from None
        root_name = _local(root.tag)
        if mapping.records:
            elements = [el for el in root.iter() if isinstance(el.tag, str) and _local(el.tag) == mapping.records]
            if not elements:
                raise IngestError(f"no <{mapping.records}> element", field="records")
        else:
            elements = [el for el in root if isinstance(el.tag, str)]
            if not elements:
                raise IngestError(f"<{root_name}> has no child elements to read as records", field=root_name)
        limit = settings.JSON_MAX_DEPTH
        counts: dict[str, int] = {}
        for index, element in enumerate(elements):
            name = _local(element.tag)
            counts[name] = counts.get(name, 0) + 1
            path = f"/{root_name}/{name}[{counts[name]}]" if mapping.records is None else f"//{name}[{counts[name]}]"
            record = _element_record(element, 1, limit, _Budget(MAX_RECORD_ELEMENTS))
            yield {"file": filename, "record": index, "path": path}, record

    def locate(self, provenance: Provenance, exc: MappingError) -> IngestError:
        return IngestError(exc.reason, field=provenance["path"] + (f"/{exc.field}" if exc.field else ""))


CLAIM_ADAPTERS: tuple[ClaimAdapter, ...] = (
    CsvClaims(),
    TsvClaims(),
    JsonClaims(),
    JsonLinesClaims(),
    XmlClaims(),
    JsonLdClaims(),
)
CLAIM_FORMATS = tuple(adapter.name for adapter in CLAIM_ADAPTERS)
CLAIM_EXTENSIONS = tuple(ext for adapter in CLAIM_ADAPTERS for ext in adapter.extensions)


def claim_adapter_for(filename: str, format_name: str | None = None) -> ClaimAdapter:
    """The adapter named by ``format_name``, else the one for the file's extension."""
    if format_name:
        for adapter in CLAIM_ADAPTERS:
            if adapter.name == format_name:
                return adapter
        raise IngestError(f"unknown claim format {format_name!r}; known: {', '.join(CLAIM_FORMATS)}", filename=filename)
    suffix = PurePath(filename).suffix.lower()
    for adapter in CLAIM_ADAPTERS:
        if suffix in adapter.extensions:
            return adapter
    raise IngestError(
        f"unsupported file type {suffix or '(none)'} for claims; supported: {', '.join(CLAIM_EXTENSIONS)} "
        f"(or give the format: {', '.join(CLAIM_FORMATS)})",
        filename=filename,
    )


def parse_claim_bytes(
    data: bytes, filename: str, mapping: ClaimMapping, format_name: str | None = None
) -> list[ExtractedClaim]:
    """The claims of one whole file, one per (source, subject, attribute) (the first given).

    Any problem raises IngestError naming the file, the line or record, and the field; then
    nothing of the file is returned. Files over INGEST_MAX_FILE_BYTES and files giving more
    than CLAIMS_MAX_PER_FILE claims are refused."""
    limit = settings.INGEST_MAX_FILE_BYTES
    if len(data) > limit:
        raise IngestError(f"file is {len(data)} bytes, over the limit of {limit}", filename=filename)
    adapter = claim_adapter_for(filename, format_name)
    text = decode_utf8(data, filename)
    if "\x00" in text:
        raise IngestError("contains NUL characters (binary file?)", filename=filename)
    max_claims = settings.CLAIMS_MAX_PER_FILE
    claims: list[ExtractedClaim] = []
    try:
        for provenance, record in adapter.records(text, filename=filename, mapping=mapping):
            try:
                claims.extend(mapping.extract(record, provenance))
            except MappingError as exc:
                raise adapter.locate(provenance, exc) from None
            if len(claims) > max_claims:
                raise IngestError(
                    f"more than {max_claims} claims in one file (CLAIMS_MAX_PER_FILE); split it",
                    line=provenance.get("line"),
                )
    except IngestError as exc:
        raise exc.located(filename) from None
    except RecursionError:
        raise IngestError("nested too deeply to parse", filename=filename) from None
    return dedupe_first(claims)
