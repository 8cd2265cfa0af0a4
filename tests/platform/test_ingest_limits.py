"""Deeply nested JSON is refused by name in every ingestion format that holds JSON, and a
batch goes on past it: each file whole or not at all, the others still processed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sources import services
from sources.ingest import IngestError, parse_bytes, read_limited
from sources.ingest.document_formats import XmlAdapter
from sources.models import Document
from sources.services import ingest_files
from tests.factories import SourceFactory
from tests.platform.helpers import CountingEmbedder

DEEP_ARRAYS = ("[" * 100_000 + "]" * 100_000).encode()


def rejection(data: bytes, name: str, **options) -> str:
    with pytest.raises(IngestError) as caught:
        parse_bytes(data, name, options)
    return str(caught.value)


def test_a_json_file_nested_a_hundred_thousand_levels_is_rejected_naming_the_file_and_the_limit():
    assert (
        rejection(DEEP_ARRAYS, "deep.json") == "deep.json, line 1: JSON nested deeper than 64 levels (JSON_MAX_DEPTH)"
    )


def test_a_json_ld_file_nested_990_levels_is_rejected_naming_the_file():
    node = json.dumps({"@type": "Article", "articleBody": "Bottom of the well."})
    data = '{"@graph": [' * 495 + node + "]}" * 495  # 990 levels of objects and arrays around the article
    message = rejection(data.encode(), "well.jsonld")
    assert message.startswith("well.jsonld") and "deeper than 64 levels" in message


def test_a_deep_json_line_is_rejected_with_its_line_number():
    data = b'{"text": "fine"}\n{"text": "x", "meta": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    assert rejection(data, "feed.jsonl") == "feed.jsonl, line 2: JSON nested deeper than 64 levels (JSON_MAX_DEPTH)"


def test_the_depth_limit_comes_from_the_setting(settings):
    settings.JSON_MAX_DEPTH = 3
    assert "deeper than 3 levels" in rejection(b'[{"text": "x", "m": [[1]]}]', "small.json")
    settings.JSON_MAX_DEPTH = 4
    [doc] = parse_bytes(b'[{"text": "x", "m": [[1]]}]', "small.json", {})
    assert doc.metadata == {"m": [[1]]}


def test_a_recursion_error_inside_any_adapter_rejects_the_file_by_name(monkeypatch):
    def recurse(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(XmlAdapter, "parse", recurse)
    assert rejection(b"<feed/>", "nest.xml") == "nest.xml: nested too deeply to parse"


def test_a_folder_keeps_every_file_around_a_deep_json_file_and_names_it(db, tmp_path: Path):
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "a.txt").write_text("Honey never spoils.")
    (folder / "b.json").write_bytes(DEEP_ARRAYS)
    (folder / "c.txt").write_text("The Moon has no atmosphere to speak of.")
    source = SourceFactory(name="batch")

    outcomes = ingest_files(source, [folder], CountingEmbedder())

    assert [(o.name, o.documents) for o in outcomes] == [("a.txt", 1), ("b.json", 0), ("c.txt", 1)]
    assert outcomes[1].error == "b.json, line 1: JSON nested deeper than 64 levels (JSON_MAX_DEPTH)"
    assert sorted(Document.objects.filter(source=source).values_list("text", flat=True)) == [
        "Honey never spoils.",
        "The Moon has no atmosphere to speak of.",
    ]


def test_a_worker_error_names_the_uploaded_file_never_its_stored_path(db, tmp_path: Path, settings, monkeypatch):
    settings.INGEST_MAX_FILE_BYTES = 10
    stored = tmp_path / "uploads" / "0123abcd"
    stored.mkdir(parents=True)
    big = stored / "0000-notes.txt"
    big.write_text("far more than ten bytes")
    gone = stored / "0001-gone.txt"
    gone.write_text("short")
    names = {str(big): "notes.txt", str(gone): "gone.txt"}
    read = read_limited  # what sources.services imported

    def vanishing(path: Path) -> bytes:
        if path == gone:  # deleted between the job's start and its turn
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return read(path)

    monkeypatch.setattr(services, "read_limited", vanishing)
    outcomes = ingest_files(SourceFactory(name="uploads"), [big, gone], CountingEmbedder(), display_names=names)

    assert outcomes[0].error == "notes.txt: file is 23 bytes, over the limit of 10"
    assert outcomes[1].error == "gone.txt: cannot be read (No such file or directory)"
