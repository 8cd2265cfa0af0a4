"""Claim readers: each format (CSV, TSV, JSON, JSONL, XML, JSON-LD) through a claim mapping,
with the line or field of every record, and the bounds on what a file may hold."""

from __future__ import annotations

import json

import pytest

from core.engine.claims.mapping import ClaimMapping
from sources.ingest import IngestError
from sources.ingest.claim_formats import XmlClaims, parse_claim_bytes
from tests.services.helpers import FLIGHT_CSV, FLIGHT_MAPPING, triples

# --- adapters: happy paths ------------------------------------------------------------


def test_csv_claims_with_a_header_name_their_line_and_field_and_keep_the_first_per_source(settings):
    claims = parse_claim_bytes(FLIGHT_CSV.encode(), "flights.csv", FLIGHT_MAPPING)
    assert triples(claims) == [
        ("aa", "AA-1-IAH-ORD", "actual departure time", "07:16", "7:16 a.m.", {"file": "flights.csv", "line": 2, "field": "act_dep"}),
        ("aa", "AA-1-IAH-ORD", "gate", "b 12", "B 12", {"file": "flights.csv", "line": 2, "field": "gate"}),
        ("orbitz", "AA-1-IAH-ORD", "actual departure time", "07:20", "7:20 AM", {"file": "flights.csv", "line": 3, "field": "act_dep"}),
        ("aa", "UA-9-SFO-JFK", "actual departure time", "19:05", "19:05", {"file": "flights.csv", "line": 4, "field": "act_dep"}),
        ("aa", "UA-9-SFO-JFK", "gate", "c3", "C3", {"file": "flights.csv", "line": 4, "field": "gate"}),
    ]  # fmt: skip


def test_a_headerless_tsv_reads_its_columns_from_the_mapping_without_quoting():
    mapping = ClaimMapping.from_json(
        {
            "subject": "isbn",
            "subject_normalizer": "isbn",
            "source": "store",
            "columns": ["store", "isbn", "title", "authors"],
            "attributes": {"authors": "name-list"},
        }
    )
    data = (
        b'eCampus.com\t978-0201853945\t"The Art" of it\tKnuth, Donald E.\r\n'
        b"Indoo.com\t0201853949\tArt\tNot Available\r\n"
        b'A1Books\t0201853949\tArt\tDonald E. Knuth; "R. Graham"\r\n'
    )
    claims = parse_claim_bytes(data, "book.txt", mapping, "tsv")
    assert triples(claims) == [
        ("eCampus.com", "0201853949", "authors", "knuth", "Knuth, Donald E.", {"file": "book.txt", "line": 1, "field": "authors"}),
        ("A1Books", "0201853949", "authors", "graham;knuth", 'Donald E. Knuth; "R. Graham"', {"file": "book.txt", "line": 3, "field": "authors"}),
    ]  # fmt: skip
    with pytest.raises(IngestError, match=r"book\.txt: unsupported file type \.txt for claims"):
        parse_claim_bytes(data, "book.txt", mapping)


def test_json_claims_come_from_the_array_at_the_records_path_with_nested_fields():
    mapping = ClaimMapping.from_json(
        {
            "subject": "isbn",
            "records": "data.items",
            "source": "seller.name",
            "attributes": {"authors": {"field": "authors", "normalizer": "name-list"}, "pages": "number"},
        }
    )
    data = {
        "data": {
            "items": [
                {"isbn": "0201853949", "seller": {"name": "powell"}, "authors": ["Knuth, Donald"], "pages": "1,120 p."},
                {"isbn": "0131103628", "seller": {"name": "abebooks"}, "authors": "Brian Kernighan and Dennis Ritchie"},
            ]
        }
    }
    claims = parse_claim_bytes(json.dumps(data).encode(), "books.json", mapping)
    assert triples(claims) == [
        ("powell", "0201853949", "authors", "knuth", "Knuth, Donald", {"file": "books.json", "record": 0, "field": "authors"}),
        ("powell", "0201853949", "pages", "1120", "1,120 p.", {"file": "books.json", "record": 0, "field": "pages"}),
        ("abebooks", "0131103628", "authors", "kernighan;ritchie", "Brian Kernighan and Dennis Ritchie", {"file": "books.json", "record": 1, "field": "authors"}),
    ]  # fmt: skip
    with pytest.raises(IngestError, match=r"books\.json, field '\[1\]\.seller\.name': missing source"):
        data["data"]["items"][1]["seller"] = {}
        parse_claim_bytes(json.dumps(data).encode(), "books.json", mapping)


def test_jsonl_claims_name_their_line():
    mapping = ClaimMapping.from_json({"subject": "city", "attributes": {"population": "number"}})
    data = b'{"city": "Oslo", "population": "709,037"}\n\n{"city": "Bergen", "population": 291189}\n'
    claims = parse_claim_bytes(data, "cities.jsonl", mapping)
    assert triples(claims) == [
        (None, "Oslo", "population", "709037", "709,037", {"file": "cities.jsonl", "line": 1, "field": "population"}),
        (None, "Bergen", "population", "291189", "291189", {"file": "cities.jsonl", "line": 3, "field": "population"}),
    ]


def test_xml_records_read_attributes_child_texts_nested_children_and_repeated_tags():
    mapping = ClaimMapping.from_json(
        {
            "subject": "isbn",
            "source": "store",
            "records": "book",
            "attributes": {
                "authors": {"field": "author", "normalizer": "name-list"},
                "publisher": {"field": "imprint.name", "normalizer": "text"},
            },
        }
    )
    data = b"""<?xml version="1.0"?>
<catalog xmlns="urn:x">
  <shelf>
    <book isbn="0201853949" store="powell">
      <author>Donald E. Knuth</author><author>Ronald Graham</author>
      <imprint><name>Addison-Wesley</name></imprint>
    </book>
  </shelf>
  <book isbn="0131103628" store="abebooks"><author>Kernighan, Brian</author></book>
</catalog>"""
    claims = parse_claim_bytes(data, "catalog.xml", mapping)
    assert triples(claims) == [
        ("powell", "0201853949", "authors", "graham;knuth", "Donald E. Knuth; Ronald Graham", {"file": "catalog.xml", "record": 0, "path": "//book[1]", "field": "author"}),
        ("powell", "0201853949", "publisher", "addison-wesley", "Addison-Wesley", {"file": "catalog.xml", "record": 0, "path": "//book[1]", "field": "imprint.name"}),
        ("abebooks", "0131103628", "authors", "kernighan", "Kernighan, Brian", {"file": "catalog.xml", "record": 1, "path": "//book[2]", "field": "author"}),
    ]  # fmt: skip


def test_xml_without_a_records_tag_reads_the_roots_children():
    mapping = ClaimMapping.from_json({"subject": "code", "attributes": {"capital": "text"}})
    data = b"<countries><country code='NO'><capital>Oslo</capital></country><country code='SE'/></countries>"
    claims = parse_claim_bytes(data, "c.xml", mapping)
    assert triples(claims) == [
        (None, "NO", "capital", "oslo", "Oslo", {"file": "c.xml", "record": 0, "path": "/countries/country[1]", "field": "capital"})
    ]  # fmt: skip


def test_an_xml_record_of_a_hundred_thousand_repeated_tags_is_refused_naming_the_limit():
    mapping = ClaimMapping.from_json({"subject": "code", "attributes": {"capital": "text"}})
    data = (
        b"<countries><country code='NO'><capital>Oslo</capital>"
        + b"<note>x</note>" * 100_000
        + b"</country></countries>"
    )
    with pytest.raises(
        IngestError, match=r"c\.xml: an XML record holds more than 10000 elements \(the limit per record\)"
    ):
        parse_claim_bytes(data, "c.xml", mapping)


def test_a_large_but_legal_xml_file_is_read_whole_with_every_repeat_kept_in_order():
    # 9,000 repeats inside one record (under the limit) and 20,000 records.
    mapping = ClaimMapping.from_json({"subject": "code", "attributes": {"capital": "text"}})
    notes = b"".join(b"<note>%d</note>" % i for i in range(9_000))
    data = b"<countries><country code='NO'><capital>Oslo</capital>" + notes + b"</country>"
    data += b"".join(b"<country code='C%d'><capital>City %d</capital></country>" % (i, i) for i in range(20_000))
    data += b"</countries>"
    (_, first), *_ = XmlClaims().records(data.decode(), filename="c.xml", mapping=mapping)
    assert first["note"] == [str(i) for i in range(9_000)]
    claims = parse_claim_bytes(data, "c.xml", mapping)
    assert len(claims) == 20_001
    assert (claims[0].subject, claims[0].value) == ("NO", "oslo")
    assert (claims[-1].subject, claims[-1].value) == ("C19999", "city 19999")


def test_jsonld_nodes_unwrap_value_and_id_objects():
    mapping = ClaimMapping.from_json(
        {
            "subject": "@id",
            "attributes": {
                "author": {"field": "author.name", "normalizer": "name-list"},
                "published": {"field": "datePublished", "normalizer": "date"},
                "publisher": {"field": "publisher", "normalizer": "raw"},
            },
        }
    )
    data = {
        "@context": "https://schema.org",
        "@graph": [
            {
                "@id": "urn:isbn:0201853949",
                "@type": "Book",
                "author": {"@type": "Person", "name": {"@value": "Donald Knuth"}},
                "datePublished": {"@value": "2005-07-01", "@type": "Date"},
                "publisher": {"@id": "https://aw.example/"},
            }
        ],
    }
    claims = parse_claim_bytes(json.dumps(data).encode(), "books.jsonld", mapping)
    where = {"file": "books.jsonld", "record": 0, "id": "urn:isbn:0201853949"}
    assert triples(claims) == [
        (None, "urn:isbn:0201853949", "author", "knuth", "Donald Knuth", {**where, "field": "author.name"}),
        (None, "urn:isbn:0201853949", "published", "2005-07-01", "2005-07-01", {**where, "field": "datePublished"}),
        (None, "urn:isbn:0201853949", "publisher", "https://aw.example/", "https://aw.example/", {**where, "field": "publisher"}),
    ]  # fmt: skip


def test_documents_and_claims_look_formats_up_the_same_way() -> None:
    from sources.ingest import adapter_for
    from sources.ingest.claim_formats import claim_adapter_for

    assert adapter_for("feed.XML").name == "xml" and claim_adapter_for("feed.XML").name == "xml"
    assert claim_adapter_for("data.txt", "tsv").name == "tsv"  # a named format wins over the extension
    with pytest.raises(IngestError, match=r"notes\.pdf: unsupported file type \.pdf; supported: \.txt"):
        adapter_for("notes.pdf")
    with pytest.raises(IngestError, match=r"unsupported file type \.pdf for claims; .*\(or give the format: csv, tsv"):
        claim_adapter_for("notes.pdf")
    with pytest.raises(IngestError, match="unknown claim format 'yaml'; known: csv, tsv, json"):
        claim_adapter_for("notes.yaml", "yaml")
