"""Every ingestion adapter refuses a record whose URL is not an absolute http(s) URL (a
`javascript:` URL would become a clickable link), naming the file, the line or record and
the field; the CLI then stores nothing."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from sources.ingest import IngestError, parse_bytes
from sources.links import http_url, is_http_url
from sources.models import Document, Source
from tasks.models import Job

EVIL = "javascript:alert(document.cookie)"


def csv_file(url: str) -> bytes:
    return f'text,url\nFine.,https://ok.example/1\nBad.,"{url}"\n'.encode()


def jsonl_file(url: str) -> bytes:
    return (json.dumps({"text": "Fine."}) + "\n" + json.dumps({"text": "Bad.", "url": url}) + "\n").encode()


def json_file(url: str) -> bytes:
    return json.dumps({"documents": [{"text": "Fine."}, {"text": "Bad.", "url": url}]}).encode()


def xml_file(url: str) -> bytes:
    return (
        f"<feed><document><text>Fine.</text></document><document><text>Bad.</text><url>{url}</url></document></feed>"
    ).encode()


def xml_link_file(url: str) -> bytes:
    return f'<feed><item><description>Bad.</description><link href="{url}"/></item></feed>'.encode()


def jsonld_file(url: str) -> bytes:
    return json.dumps({"@graph": [{"@type": "Article", "articleBody": "Bad.", "url": url}]}).encode()


CASES = [
    (csv_file, "news.csv", "news.csv, line 3, field 'url'"),
    (jsonl_file, "news.jsonl", "news.jsonl, line 2, field 'url'"),
    (json_file, "news.json", "news.json, field '[1].url'"),
    (xml_file, "news.xml", "news.xml, field 'document[1]/url'"),
    (xml_link_file, "news.xml", "news.xml, field 'item[0]/link'"),
    (jsonld_file, "news.jsonld", "news.jsonld, field 'node[0].url'"),
]


@pytest.mark.parametrize(("build", "filename", "where"), CASES)
@pytest.mark.parametrize("url", [EVIL, "data:text/html;base64,PHNjcmlwdD4=", "www.example.org/no-scheme"])
def test_every_adapter_refuses_a_record_whose_url_is_not_http_naming_where(db, build, filename, where, url):
    with pytest.raises(IngestError) as caught:
        parse_bytes(build(url), filename)
    assert str(caught.value) == f"{where}: only http and https URLs are accepted"


@pytest.mark.parametrize(("build", "filename", "where"), CASES)
def test_every_adapter_keeps_an_https_url(db, build, filename, where):
    docs = parse_bytes(build("https://news.example.org/a?x=1"), filename)
    assert docs[-1].url == "https://news.example.org/a?x=1"


def test_a_json_ld_id_that_is_not_a_web_address_is_an_identifier_not_a_link(db):
    data = json.dumps(
        [
            {"@id": "urn:uuid:1b4e28ba-2fa1-11d2-883f-0016d3cca427", "articleBody": "One."},
            {"@id": EVIL, "articleBody": "Two."},
            {"@id": "https://news.example/a3", "articleBody": "Three."},
        ]
    ).encode()
    assert [d.url for d in parse_bytes(data, "feed.jsonld")] == ["", "", "https://news.example/a3"]


def test_a_url_longer_than_the_column_is_refused(db):
    with pytest.raises(IngestError, match="longer than 2000 characters"):
        parse_bytes(jsonl_file("https://example.org/" + "a" * 2000), "long.jsonl")


def test_the_cli_refuses_a_file_with_a_javascript_url_and_stores_nothing(db, tmp_path):
    path = tmp_path / "evil.jsonl"
    path.write_bytes(jsonl_file(EVIL))
    with pytest.raises(CommandError, match=r"evil.jsonl, line 2, field 'url': only http and https URLs are accepted"):
        call_command("ingest", str(path), source="evil")
    assert not Source.objects.filter(name="evil").exists()
    assert not Document.objects.exists()
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ("https://example.org/a", True),
        ("http://example.org", True),
        (EVIL, False),
        ("JAVASCRIPT:alert(1)", False),
        ("java\tscript:alert(1)", False),
        (" https://example.org/a", False),  # browsers strip it, then follow what is left
        ("//evil.example/x", False),
        ("/local", False),
        ("", False),
        (None, False),
    ],
)
def test_only_absolute_http_urls_count_as_links(value, safe):
    assert is_http_url(value) is safe
    assert http_url(value) == (value if safe else "")
