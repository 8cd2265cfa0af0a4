"""One reader per file format: a file is read once into (Location, mapping) records, and
documents and claims are two mappings over the same records, located and refused alike."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from core.engine.claims.mapping import ClaimMapping
from core.engine.types import JSONValue
from sources.ingest import IngestError, parse_bytes
from sources.ingest.claim_formats import parse_claim_bytes
from sources.ingest.document_formats import field_mapping, record_to_document
from sources.ingest.readers import (
    MAX_RECORD_ELEMENTS,
    Location,
    Record,
    XmlRecord,
    read_csv,
    read_json,
    read_jsonl,
    read_jsonld,
    read_xml,
)

# A record holds both a document (text, title) and a claim (city -> country).
CITY_MAPPING = ClaimMapping.from_json({"subject": "city", "attributes": {"country": "text"}})
MAX_CHARS = 10_000


def both(
    records: list[Record],
) -> tuple[list[tuple[str, dict[str, JSONValue]]], list[tuple[str, str, dict[str, JSONValue]]]]:
    """The documents and the claims of the same records: (title, provenance), (subject, value, provenance)."""
    documents = [record_to_document(r, field_mapping({}), max_chars=MAX_CHARS) for r in records]
    claims = [c for r in records for c in CITY_MAPPING.extract(r.fields, r.location.provenance())]
    return [(d.title, d.provenance) for d in documents], [(c.subject, c.value, c.provenance) for c in claims]


def error_of(call: Callable[[], object]) -> str:
    with pytest.raises(IngestError) as caught:
        call()
    return str(caught.value)


# --- one read, two mappings ---------------------------------------------------------------


def test_a_csv_file_read_once_gives_records_that_both_mappings_consume() -> None:
    text = "city,country,title,text\nOslo,Norway,Oslo,Oslo is the capital of Norway.\n\nBern,Switzerland,Bern,Bern.\n"
    records = list(read_csv(text, filename="cities.csv"))

    documents, claims = both(records)

    assert [r.location for r in records] == [Location("cities.csv", line=2), Location("cities.csv", line=4)]
    assert documents == [("Oslo", {"file": "cities.csv", "line": 2}), ("Bern", {"file": "cities.csv", "line": 4})]
    assert claims == [
        ("Oslo", "norway", {"file": "cities.csv", "line": 2, "field": "country"}),
        ("Bern", "switzerland", {"file": "cities.csv", "line": 4, "field": "country"}),
    ]


def test_a_json_lines_file_read_once_gives_records_that_both_mappings_consume() -> None:
    text = '{"city": "Oslo", "country": "Norway", "text": "Oslo is in Norway.", "title": "Oslo"}\n'
    [record] = read_jsonl(text, filename="cities.jsonl")

    documents, claims = both([record])

    assert documents == [("Oslo", {"file": "cities.jsonl", "line": 1})]
    assert claims == [("Oslo", "norway", {"file": "cities.jsonl", "line": 1, "field": "country"})]


def test_a_json_array_read_once_gives_records_named_by_position_for_both_mappings() -> None:
    text = json.dumps([{"city": "Oslo", "country": "Norway", "text": "Oslo.", "title": "Oslo"}])
    [record] = read_json(text, filename="cities.json", select=lambda data: data)

    documents, claims = both([record])

    assert documents == [("Oslo", {"file": "cities.json", "record": 0})]
    assert claims == [("Oslo", "norway", {"file": "cities.json", "record": 0, "field": "country"})]


def test_an_xml_record_is_a_mapping_for_claims_and_keeps_its_element_for_documents() -> None:
    data = (
        "<feed><document id='d1'><city>Oslo</city><country>Norway</country>"
        "<title>Oslo</title><text>Oslo is in <b>Norway</b>.</text></document></feed>"
    )
    [(location, record)] = read_xml(data, filename="feed.xml", tags=("document",))

    assert isinstance(record, XmlRecord)
    assert dict(record) == {
        "id": "d1",
        "city": "Oslo",
        "country": "Norway",
        "title": "Oslo",
        "text": {"b": "Norway"},  # the claims' view: a child with children is nested
    }
    assert location.provenance() == {"file": "feed.xml", "record": 0, "path": "//document[1]"}
    # The same file through both public entry points: documents read the element's whole text.
    [document] = parse_bytes(data.encode(), "feed.xml")
    assert (document.title, document.text, document.metadata) == ("Oslo", "Oslo is in Norway.", {"id": "d1"})
    [claim] = parse_claim_bytes(data.encode(), "feed.xml", CITY_MAPPING)
    assert (claim.subject, claim.value) == ("Oslo", "norway")


def test_the_xml_element_budget_bounds_the_claims_view_only() -> None:
    # A long article with more inline markup than a claim record may hold: a document, not claims.
    words = "".join(f"<i>w{i}</i> " for i in range(MAX_RECORD_ELEMENTS + 1))
    data = f"<feed><document><city>Oslo</city><text>{words}</text></document></feed>".encode()

    [document] = parse_bytes(data, "long.xml")
    assert document.text.startswith("w0 w1 ")
    assert error_of(lambda: parse_claim_bytes(data, "long.xml", CITY_MAPPING)) == (
        f"long.xml: an XML record holds more than {MAX_RECORD_ELEMENTS} elements (the limit per record)"
    )


def test_the_json_ld_walker_flattens_graphs_and_lists_and_keeps_string_ids() -> None:
    data = json.dumps(
        [
            {"@graph": [{"@id": "urn:a", "name": "A"}, "a stray string"]},
            {"@graph": [{"@graph": [{"@id": {"not": "a string"}, "name": "B"}]}]},
        ]
    )

    records = list(read_jsonld(data, filename="g.jsonld", skip_non_objects=True))

    assert [(r.location.provenance(), r.fields["name"]) for r in records] == [
        ({"file": "g.jsonld", "record": 0, "id": "urn:a"}, "A"),
        ({"file": "g.jsonld", "record": 1}, "B"),
    ]
    with pytest.raises(IngestError) as caught:
        list(read_jsonld(data, filename="g.jsonld"))
    assert str(caught.value) == "g.jsonld, field 'node[1]': expected an object, got str"


# --- one way of naming where a record is wrong ---------------------------------------------


GOOD = {"city": "Oslo", "country": "Norway", "text": "Oslo is in Norway."}
BAD = {"city": "", "country": "Sweden", "text": "   "}  # no subject for claims, no text for documents

FILES = [
    ("cities.csv", "city,country,text\nOslo,Norway,Oslo is in Norway.\n,Sweden,   \n", "cities.csv, line 3"),
    ("cities.jsonl", "\n".join(json.dumps(r) for r in (GOOD, BAD)), "cities.jsonl, line 2"),
    ("cities.json", json.dumps([GOOD, BAD]), "cities.json, field '[1]"),
    ("cities.jsonld", json.dumps({"@graph": [{**GOOD, "articleBody": "x"}, {**BAD, "articleBody": " "}]}), "cities.jsonld, field 'node[1]"),
]  # fmt: skip


@pytest.mark.parametrize(("filename", "data", "where"), FILES)
def test_a_bad_record_is_named_alike_by_the_document_and_the_claim_mapping(
    filename: str, data: str, where: str
) -> None:
    document_error = error_of(lambda: parse_bytes(data.encode(), filename))
    claim_error = error_of(lambda: parse_claim_bytes(data.encode(), filename, CITY_MAPPING))

    assert document_error.startswith(where)
    assert claim_error.startswith(where)
    assert claim_error.endswith("missing subject")


def test_an_xml_record_is_named_by_its_path_for_claims_and_by_its_tag_and_position_for_documents() -> None:
    # Stored document provenance says "document[1]"; a claim's says the element's path.
    data = b"<feed><document><city>Oslo</city><text>x</text></document><document><text> </text></document></feed>"

    assert error_of(lambda: parse_bytes(data, "feed.xml")) == "feed.xml, field 'document[1]/text': empty text"
    assert error_of(lambda: parse_claim_bytes(data, "feed.xml", CITY_MAPPING)) == (
        "feed.xml, field '/feed/document[2]/city': missing subject"
    )


def test_a_location_words_every_error_about_its_record() -> None:
    assert str(Location("a.csv", line=4).error("missing", "city")) == "a.csv, line 4, field 'city': missing"
    assert str(Location("a.json", record=2, label="[2]").error("empty text", "text")) == (
        "a.json, field '[2].text': empty text"
    )
    assert str(Location("a.xml", record=0, path="/r/x[1]", label="/r/x[1]", sep="/").error("bad")) == (
        "a.xml, field '/r/x[1]': bad"
    )
    located = Location("a.json", record=1, label="[1]").locate(IngestError("not an ISO date", field="published"))
    assert str(located) == "a.json, field '[1].published': not an ISO date"


MALFORMED = [
    ("bad.json", '[\n  {"city": "Oslo"},\n  {"city": oops}\n]', "bad.json, line 3: invalid JSON"),
    ("bad.jsonl", '{"city": "Oslo", "text": "x"}\n["a list"]\n', "bad.jsonl, line 2: expected an object, got list"),
    ("bad.xml", "<feed>\n<document><city>x</city></feed>", "bad.xml, line 2: malformed XML"),
    ("bad.xml", '<!DOCTYPE x [<!ENTITY a "a">]><x><document>&a;</document></x>', "bad.xml: refused unsafe XML"),
    ("bad.csv", 'city,country,text\nOslo,Norway,fine\nBern,Swiss,"never closed\n', "bad.csv, line 3: malformed CSV"),
    ("bad.csv", "city,country,text\nOslo,Norway,fine,extra\n", "bad.csv, line 2: expected 3 columns, found 4"),
    ("bad.csv", "city,country,text\n\n", "bad.csv, line 1: no data rows"),
]


@pytest.mark.parametrize(("filename", "data", "message"), MALFORMED)
def test_a_malformed_file_is_refused_by_its_reader_in_the_same_words_for_documents_and_claims(
    filename: str, data: str, message: str
) -> None:
    document_error = error_of(lambda: parse_bytes(data.encode(), filename))
    claim_error = error_of(lambda: parse_claim_bytes(data.encode(), filename, CITY_MAPPING))

    assert document_error == claim_error
    assert document_error.startswith(message)
