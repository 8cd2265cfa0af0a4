"""Claims: a structured or semi-structured file, read through a claim mapping, to claims.

The claim mapping over the records of sources.ingest.readers (the readers documents use
too): each format's ClaimAdapter gives the reader the mapping's choices (the CSV/TSV
``columns`` and header check, the JSON ``records`` path, the XML ``records`` tag) and yields
its Records, a record being what ``ClaimMapping.extract`` reads (a mapping of field ->
value, nested for JSON and XML). ``parse_claim_bytes`` runs the mapping over every record;
any problem (undecodable bytes, malformed CSV/JSON/XML, a record the mapping cannot read,
too many claims) raises IngestError naming the line, record or path and the field (the
record's Location words it, as for documents), and nothing of the file is returned, so
nothing of it is stored.

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
  element is read as the mapping of its attributes and its children (a leaf child by its
  text, a child with children as a nested mapping, a repeated tag as a list);
- ``jsonld`` (.jsonld): the nodes of ``@graph`` (or of a list of nodes), keys as given,
  {"@value": x} read as x and {"@id": x} as x.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeGuard

from django.conf import settings

from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.claims.types import ExtractedClaim, dedupe_first
from sources.ingest.base import Formats, IngestError
from sources.ingest.readers import (
    Record,
    check_size,
    decode_text,
    read_csv,
    read_json,
    read_jsonl,
    read_jsonld,
    read_tsv,
    read_xml,
)

# Keys of a JSON object that hold its records when the mapping names no `records` path.
JSON_ARRAY_KEYS = ("documents", "records", "items", "data")


class ClaimAdapter(Protocol):
    name: str
    extensions: tuple[str, ...]

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[Record]:
        """The file's records as the mapping reads them, each with its Location."""
        ...


def _is_claim_adapter(item: object) -> TypeGuard[type[ClaimAdapter]]:
    return isinstance(item, type) and callable(getattr(item, "records", None))


# The claim formats, each registered below where it is defined.
CLAIM_ADAPTERS: Formats[ClaimAdapter] = Formats("claim format", _is_claim_adapter, purpose=" for claims")


# --- tabular --------------------------------------------------------------------------


def _header_check(mapping: ClaimMapping) -> Callable[[list[str]], None]:
    """The mapping's check of the columns (the header row's, or its own ``columns``)."""
    where = "columns" if mapping.columns else "header"

    def check(header: list[str]) -> None:
        try:
            mapping.check_header(header)
        except MappingError as exc:
            raise IngestError(
                f"{exc.reason} ({where})", line=1 if where == "header" else None, field=exc.field
            ) from None

    return check


@CLAIM_ADAPTERS.register("csv")
class CsvClaims:
    name = "csv"
    extensions: tuple[str, ...] = (".csv",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[Record]:
        return read_csv(text, filename=filename, columns=mapping.columns, check_header=_header_check(mapping))


@CLAIM_ADAPTERS.register("tsv")
class TsvClaims:
    """Tab-separated without quoting, as core.bench.truth.read_records reads the Books file."""

    name = "tsv"
    extensions: tuple[str, ...] = (".tsv",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[Record]:
        return read_tsv(text, filename=filename, columns=mapping.columns, check_header=_header_check(mapping))


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


def _record_list(data: Any, mapping: ClaimMapping) -> Sequence[Any]:
    if mapping.records:
        data = _at_path(data, mapping.records)
    elif isinstance(data, Mapping):
        key = next((k for k in JSON_ARRAY_KEYS if isinstance(data.get(k), list)), None)
        data = data[key] if key else [data]
    if not isinstance(data, list) or not data:
        raise IngestError("expected a non-empty array of objects", field=mapping.records or "records")
    return data


@CLAIM_ADAPTERS.register("json")
class JsonClaims:
    name = "json"
    extensions: tuple[str, ...] = (".json",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[Record]:
        return read_json(text, filename=filename, select=lambda data: _record_list(data, mapping))


@CLAIM_ADAPTERS.register("jsonl")
class JsonLinesClaims:
    name = "jsonl"
    extensions: tuple[str, ...] = (".jsonl", ".ndjson")

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[Record]:
        return read_jsonl(text, filename=filename)


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


@CLAIM_ADAPTERS.register("jsonld")
class JsonLdClaims:
    name = "jsonld"
    extensions: tuple[str, ...] = (".jsonld",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[Record]:
        path = mapping.records
        select = (lambda data: _at_path(data, path)) if path else None
        count = 0
        for location, node in read_jsonld(text, filename=filename, select=select):
            count += 1
            fields = _ld_value(node)
            if not isinstance(fields, Mapping):  # a node that is itself a value object
                raise location.error(f"expected an object, got {type(fields).__name__}")
            yield Record(location, fields)
        if count == 0:
            raise IngestError("no nodes", field="@graph")


# --- XML ------------------------------------------------------------------------------


@CLAIM_ADAPTERS.register("xml")
class XmlClaims:
    name = "xml"
    extensions: tuple[str, ...] = (".xml",)

    def records(self, text: str, *, filename: str, mapping: ClaimMapping) -> Iterator[Record]:
        return read_xml(text, filename=filename, tags=(mapping.records,) if mapping.records else None)


CLAIM_FORMATS = CLAIM_ADAPTERS.format_names()
CLAIM_EXTENSIONS = CLAIM_ADAPTERS.extensions()


def claim_adapter_for(filename: str, format_name: str | None = None) -> ClaimAdapter:
    """The adapter named by ``format_name``, else the one for the file's extension."""
    return CLAIM_ADAPTERS.for_file(filename, format_name)


def parse_claim_bytes(
    data: bytes, filename: str, mapping: ClaimMapping, format_name: str | None = None
) -> list[ExtractedClaim]:
    """The claims of one whole file, one per (source, subject, attribute) (the first given).

    Every problem raises IngestError naming the file, the line or record, and the field; then
    nothing of the file is returned. Files over INGEST_MAX_FILE_BYTES and files giving more
    than CLAIMS_MAX_PER_FILE claims are refused."""
    check_size(data, filename)
    adapter = claim_adapter_for(filename, format_name)
    text = decode_text(data, filename)
    max_claims = settings.CLAIMS_MAX_PER_FILE
    claims: list[ExtractedClaim] = []
    try:
        for location, fields in adapter.records(text, filename=filename, mapping=mapping):
            try:
                claims.extend(mapping.extract(fields, location.provenance()))
            except MappingError as exc:
                raise location.error(exc.reason, exc.field) from None
            if len(claims) > max_claims:
                raise IngestError(
                    f"more than {max_claims} claims in one file (CLAIMS_MAX_PER_FILE); split it",
                    line=location.line,
                )
    except IngestError as exc:
        raise exc.located(filename) from None
    except RecursionError:
        raise IngestError("nested too deeply to parse", filename=filename) from None
    return dedupe_first(claims)
