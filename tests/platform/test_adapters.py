"""Every ingestion adapter: what it makes of well-formed files, and how it names what is wrong."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from sources.ingest import IngestError, parse_bytes
from sources.models import Chunk, Document
from sources.services import FileOutcome, ingest_files, store_documents, validate_uploads
from tests.factories import SourceFactory
from tests.platform.helpers import CountingEmbedder

UTC = dt.UTC


def parse(data: str | bytes, name: str, **options):
    return parse_bytes(data.encode() if isinstance(data, str) else data, name, options)


def rejection(data: str | bytes, name: str, **options) -> str:
    with pytest.raises(IngestError) as info:
        parse(data, name, **options)
    return str(info.value)


# --- happy paths ------------------------------------------------------------------------


def test_a_markdown_file_takes_its_title_from_the_leading_heading():
    [doc] = parse("# The Eiffel Tower\n\nThe tower is in Paris. It opened in 1889.\n", "eiffel.md")
    assert doc.title == "The Eiffel Tower"
    assert "It opened in 1889." in doc.text
    assert doc.provenance == {"file": "eiffel.md", "line": 1}


def test_a_text_file_without_a_heading_is_titled_after_its_file_name():
    [doc] = parse("Honey never spoils.\nArchaeologists found edible honey.", "honey-facts.txt")
    assert doc.title == "honey-facts"
    assert doc.text == "Honey never spoils.\nArchaeologists found edible honey."


def test_a_hashtag_on_the_first_line_is_not_taken_for_a_markdown_heading():
    [doc] = parse("#breaking the bridge is closed\nTraffic is diverted.", "post.md")
    assert doc.title == "post"


def test_a_csv_file_maps_its_columns_to_text_title_url_and_date():
    data = (
        "headline,body,link,day,author\n"
        "Tower,The tower is in Paris.,https://example.org/t,2024-03-01,Ann\n"
        'Bridge,"A bridge, long and old.",https://example.org/b,2024-03-02T10:30:00+02:00,Bob\n'
    )
    docs = parse(data, "news.csv", mapping={"text": "body", "title": "headline", "url": "link", "published": "day"})
    assert [d.title for d in docs] == ["Tower", "Bridge"]
    assert [d.text for d in docs] == ["The tower is in Paris.", "A bridge, long and old."]
    assert [d.url for d in docs] == ["https://example.org/t", "https://example.org/b"]
    assert docs[0].published_at == dt.datetime(2024, 3, 1, tzinfo=UTC)
    assert docs[1].published_at == dt.datetime(2024, 3, 2, 8, 30, tzinfo=UTC)
    assert docs[0].metadata == {"author": "Ann"}  # unmapped columns are kept as metadata
    assert [d.provenance for d in docs] == [{"file": "news.csv", "line": 2}, {"file": "news.csv", "line": 3}]


def test_a_csv_record_with_a_quoted_line_break_is_located_at_its_first_line():
    docs = parse('title,text\nA,"two\nlines"\nB,one line\n', "multi.csv")
    assert [d.text for d in docs] == ["two\nlines", "one line"]
    assert [d.provenance["line"] for d in docs] == [2, 4]


def test_a_json_array_of_objects_becomes_one_document_per_object():
    data = json.dumps(
        [
            {
                "text": "Mount Everest is 8849 metres high.",
                "title": "Everest",
                "url": "https://e.org/ev",
                "published": "2023-05-29",
            },
            {"text": "K2 is the second highest mountain.", "title": "K2", "lang": "en"},
        ]
    )
    docs = parse(data, "peaks.json")
    assert [d.title for d in docs] == ["Everest", "K2"]
    assert docs[0].url == "https://e.org/ev"
    assert docs[0].published_at == dt.datetime(2023, 5, 29, tzinfo=UTC)
    assert docs[1].published_at is None
    assert docs[1].metadata == {"lang": "en"}
    assert [d.provenance for d in docs] == [{"file": "peaks.json", "record": 0}, {"file": "peaks.json", "record": 1}]


def test_a_json_object_with_a_documents_list_is_read_like_an_array():
    data = json.dumps({"documents": [{"text": "Water boils at 100 degrees.", "title": "Boiling"}]})
    [doc] = parse(data, "physics.json")
    assert (doc.title, doc.text) == ("Boiling", "Water boils at 100 degrees.")


def test_json_lines_give_one_document_per_line_with_its_line_number():
    data = '{"text": "First fact.", "title": "One"}\n\n{"text": "Second fact.", "title": "Two", "url": "https://x.org/2"}\n'
    docs = parse(data, "facts.jsonl")
    assert [(d.title, d.text, d.url) for d in docs] == [
        ("One", "First fact.", ""),
        ("Two", "Second fact.", "https://x.org/2"),
    ]
    assert [d.provenance["line"] for d in docs] == [1, 3]


def test_json_lines_may_hold_unicode_line_separators_inside_strings():
    # json.dumps(..., ensure_ascii=False) writes U+2028 raw; it is not a line break in JSONL.
    data = json.dumps({"text": "A poem\u2028with a line separator."}, ensure_ascii=False) + "\n" + '{"text": "Next."}\n'
    docs = parse(data, "poems.jsonl")
    assert [d.text for d in docs] == ["A poem\u2028with a line separator.", "Next."]
    assert [d.provenance["line"] for d in docs] == [1, 2]


def test_xml_document_records_give_title_text_url_and_date():
    data = """<?xml version="1.0" encoding="UTF-8"?>
<feed>
  <document id="d1">
    <title>Tower</title>
    <text>The tower is in <b>Paris</b>.</text>
    <url>https://example.org/t</url>
    <published>2024-01-02</published>
  </document>
  <document>
    <title>Bridge</title>
    <body>The bridge is old.</body>
    <link href="https://example.org/b"/>
  </document>
</feed>"""
    docs = parse(data, "feed.xml")
    assert [(d.title, d.text, d.url) for d in docs] == [
        ("Tower", "The tower is in Paris.", "https://example.org/t"),
        ("Bridge", "The bridge is old.", "https://example.org/b"),
    ]
    assert docs[0].published_at == dt.datetime(2024, 1, 2, tzinfo=UTC)
    assert docs[0].metadata == {"id": "d1"}
    assert [d.provenance for d in docs] == [
        {"file": "feed.xml", "element": "document[0]"},
        {"file": "feed.xml", "element": "document[1]"},
    ]


def test_json_ld_graph_articles_use_schema_org_fields():
    data = json.dumps(
        {
            "@context": "https://schema.org",
            "@graph": [
                {
                    "@type": "NewsArticle",
                    "@id": "https://news.example/a1",
                    "headline": "Storm closes the harbour",
                    "articleBody": "The harbour was closed on Monday.",
                    "datePublished": "2024-02-03T08:00:00Z",
                    "author": {"@type": "Person", "name": "Ann Lee"},
                },
                {
                    "@type": "Article",
                    "name": "Harbour reopens",
                    "text": "The harbour reopened on Wednesday.",
                    "url": "https://news.example/a2",
                },
                {"@type": "Organization", "name": "Example News"},  # no text: not a document
            ],
        }
    )
    docs = parse(data, "news.jsonld")
    assert [d.title for d in docs] == ["Storm closes the harbour", "Harbour reopens"]
    assert [d.text for d in docs] == ["The harbour was closed on Monday.", "The harbour reopened on Wednesday."]
    assert [d.url for d in docs] == ["https://news.example/a1", "https://news.example/a2"]
    assert docs[0].published_at == dt.datetime(2024, 2, 3, 8, 0, tzinfo=UTC)
    assert docs[0].metadata == {"@type": "NewsArticle", "author": "Ann Lee"}
    assert [d.provenance for d in docs] == [{"file": "news.jsonld", "node": 0}, {"file": "news.jsonld", "node": 1}]


# --- rejections -------------------------------------------------------------------------


def test_a_csv_row_with_the_wrong_column_count_is_rejected_with_its_line():
    message = rejection("title,text\nA,fine\nB,too,many\n", "rows.csv")
    assert message == "rows.csv, line 3: expected 2 columns, found 3"


def test_an_unterminated_csv_quote_is_rejected_naming_the_line_where_the_field_starts():
    message = rejection('title,text\nA,fine\nB,"never closed\nC,more\n', "quotes.csv")
    assert message.startswith("quotes.csv, line 3: malformed CSV")


def test_a_csv_without_the_mapped_text_column_names_the_column():
    message = rejection("title,body\nA,x\n", "cols.csv")
    assert "line 1, field 'text'" in message


def test_invalid_json_is_rejected_with_its_line_number():
    message = rejection('[\n  {"text": "ok"},\n  {"text": oops}\n]', "bad.json")
    assert message.startswith("bad.json, line 3: invalid JSON")


def test_a_json_record_with_empty_text_names_the_record_and_field():
    message = rejection('[{"text": "ok"}, {"text": "   "}]', "empty.json")
    assert message == "empty.json, field '[1].text': empty text"


def test_a_bad_json_line_is_rejected_with_its_line_number():
    message = rejection('{"text": "one"}\n{"text": "two"}\n{"text": "three"\n', "bad.jsonl")
    assert message.startswith("bad.jsonl, line 3: invalid JSON")


def test_a_json_line_that_is_not_an_object_is_rejected_with_its_line():
    message = rejection('{"text": "one"}\n["not", "an", "object"]\n', "list.jsonl")
    assert message == "list.jsonl, line 2: expected an object, got list"


@pytest.mark.parametrize(
    "name, data",
    [
        (
            "dtd.xml",
            '<?xml version="1.0"?>\n<!DOCTYPE feed [<!ELEMENT feed ANY>]>\n<feed><document><text>x</text></document></feed>',
        ),
        (
            "laughs.xml",
            '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
            ' <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n'
            ' <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">\n]>\n'
            "<feed><document><text>&lol3;</text></document></feed>",
        ),
        (
            "external.xml",
            '<?xml version="1.0"?>\n<!DOCTYPE feed [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
            "<feed><document><text>&xxe;</text></document></feed>",
        ),
    ],
)
def test_xml_with_a_dtd_or_entities_is_refused(name, data):
    message = rejection(data, name)
    assert message.startswith(f"{name}: refused unsafe XML")
    assert "passwd" not in message and "lollol" not in message


def test_malformed_xml_is_rejected_with_its_line():
    message = rejection("<feed>\n<document><text>x</text></document>\n<document><text>y</text></feed>\n", "broken.xml")
    assert message.startswith("broken.xml, line 3: malformed XML")


def test_an_xml_record_without_text_names_the_element():
    message = rejection("<feed><document><title>No body</title></document></feed>", "notext.xml")
    assert message == "notext.xml, field 'document[0]': no <text> element"


def test_latin_1_bytes_are_rejected_as_not_utf_8_with_the_line():
    message = rejection("first line\nCaf\xe9 au lait\n".encode("latin-1"), "menu.txt")
    assert message == "menu.txt, line 2: not valid UTF-8 (byte 14)"


def test_an_empty_text_file_is_rejected():
    assert rejection("  \n\n ", "empty.txt") == "empty.txt, field 'text': empty text"


def test_a_file_over_the_size_limit_is_rejected(settings):
    settings.INGEST_MAX_FILE_BYTES = 10
    assert rejection("eleven bytes", "big.txt") == "big.txt: file is 12 bytes, over the limit of 10"


def test_an_unknown_extension_is_rejected_listing_the_supported_ones():
    message = rejection("x", "slides.pptx")
    assert message.startswith("slides.pptx: unsupported file type .pptx; supported: .txt")


def test_an_invalid_iso_date_names_the_field():
    message = rejection('{"text": "ok", "published": "yesterday"}\n', "dates.jsonl")
    assert message == "dates.jsonl, line 1, field 'published': not an ISO date: 'yesterday'"


def test_a_nul_character_escaped_in_json_is_rejected_naming_the_field():
    assert rejection('{"text": "ok"}\n{"text": "bad\\u0000byte"}\n', "nul.jsonl") == (
        "nul.jsonl, line 2, field 'text': contains a NUL character"
    )
    assert rejection('{"text": "ok", "note": "x\\u0000"}\n', "meta.jsonl") == (
        "meta.jsonl, line 1, field 'note': contains a NUL character"
    )


def test_validate_uploads_counts_documents_and_rejects_the_first_bad_file():
    assert validate_uploads([("a.txt", b"One."), ("b.jsonl", b'{"text": "x"}\n{"text": "y"}\n')]) == [1, 2]
    with pytest.raises(IngestError, match=r"c.csv, line 2: expected 1 columns, found 2"):
        validate_uploads([("a.txt", b"One."), ("c.csv", b"text\nx,y\n")])


# --- nothing of a rejected file is stored ---------------------------------------------------


BAD_FILES = {
    "rows.csv": b"title,text\nA,fine\nB,too,many\n",
    "bad.json": b'[{"text": "ok"}, {"text": oops}]',
    "bad.jsonl": b'{"text": "fine"}\n{"text": broken}\n',
    "laughs.xml": b'<!DOCTYPE x [<!ENTITY a "aaaa">]><feed><document><text>&a;</text></document></feed>',
    "broken.xml": b"<feed><document><text>x</text></feed>",
    "latin.txt": "Caf\xe9".encode("latin-1"),
    "empty.md": b"   ",
    "slides.pptx": b"x",
    "nul.jsonl": b'{"text": "fine"}\n{"text": "nul \\u0000 inside"}\n',
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_rejected_file_stores_nothing_and_leaves_the_chunk_count_alone(db, tmp_path: Path, name):
    source = SourceFactory(name="target")
    good = tmp_path / "good.txt"
    good.write_text("Honey never spoils. It keeps for thousands of years.")
    bad = tmp_path / name
    bad.write_bytes(BAD_FILES[name])
    ingest_files(source, [good], CountingEmbedder())
    source.refresh_from_db()
    before = (Document.objects.count(), Chunk.objects.count(), source.chunk_count)

    outcomes = ingest_files(source, [bad, good], CountingEmbedder())

    assert outcomes[0].error.startswith(f"{name}")
    assert outcomes[0].documents == outcomes[0].chunks == 0
    assert outcomes[1].error == "" and outcomes[1].duplicates == 1
    source.refresh_from_db()
    assert (Document.objects.count(), Chunk.objects.count(), source.chunk_count) == before
    assert not Document.objects.filter(metadata__provenance__file=name).exists()


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(db, tmp_path, settings):
    settings.INGEST_MAX_FILE_BYTES = 100
    source = SourceFactory(name="target")
    big = tmp_path / "big.txt"
    big.write_text("word " * 100)
    [outcome] = ingest_files(source, [big], CountingEmbedder())
    assert outcome.error == "big.txt: file is 500 bytes, over the limit of 100"
    assert Document.objects.count() == Chunk.objects.count() == 0


def test_store_documents_keeps_one_copy_of_texts_repeated_inside_one_file(db):
    source = SourceFactory(name="dups")
    docs = parse(
        '{"text": "The sky is blue.", "title": "first"}\n'
        '{"text": "Grass is green."}\n'
        '{"text": "The  sky is\\nblue.", "title": "same text, other spacing"}\n',
        "dups.jsonl",
    )
    embedder = CountingEmbedder()
    outcome = store_documents(source, docs, embedder, chunk_size=50, chunk_overlap=5, outcome=FileOutcome("dups.jsonl"))
    assert (outcome.documents, outcome.duplicates, outcome.chunks) == (2, 1, 2)
    assert sorted(Document.objects.filter(source=source).values_list("title", flat=True)) == ["", "first"]
    assert embedder.texts == ["The sky is blue.", "Grass is green."]  # the duplicate is never embedded

    again = store_documents(source, docs, embedder, chunk_size=50, chunk_overlap=5, outcome=FileOutcome("dups.jsonl"))
    assert (again.documents, again.duplicates, again.chunks) == (0, 3, 0)
    source.refresh_from_db()
    assert source.chunk_count == Chunk.objects.filter(source=source).count() == 2
    assert len(embedder.texts) == 2  # nothing re-embedded


def test_stored_documents_keep_their_provenance_and_fields(db, tmp_path):
    source = SourceFactory(name="prov")
    path = tmp_path / "feed.jsonl"
    path.write_text(
        '{"text": "Tides follow the moon.", "title": "Tides", "url": "https://x.org/t", "published": "2022-07-01", "lang": "en"}\n'
    )
    [outcome] = ingest_files(source, [path], CountingEmbedder())
    assert outcome.error == "" and outcome.documents == 1
    doc = Document.objects.get(source=source)
    assert (doc.title, doc.url, doc.published_at) == ("Tides", "https://x.org/t", dt.datetime(2022, 7, 1, tzinfo=UTC))
    assert doc.metadata == {"lang": "en", "provenance": {"file": "feed.jsonl", "line": 1}}
