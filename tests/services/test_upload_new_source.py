"""The admin's upload form: documents for a new source named on the form (created only with an
accepted upload, with its admin history), and sources grouped by kind in the chooser."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.models import ADDITION, LogEntry
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from sources.models import Source
from tests.factories import SourceFactory

GOOD = b"title,text\nA,The sky is blue.\nB,Grass is green.\n"
BAD = b"title,text\nA,The sky is blue.\nB,Grass,green\n"


def upload(admin_client: Any, body: bytes, **fields: Any) -> Any:
    return admin_client.post(
        reverse("admin:sources_source_upload"),
        {"files": [SimpleUploadedFile("notes.csv", body)], "csv_mapping": "", **fields},
        follow=True,
    )


def test_a_new_source_named_on_the_upload_form_is_created_with_its_accepted_documents(
    db: Any, admin_client: Any
) -> None:
    refused = upload(admin_client, BAD, new_source="Field Notes", new_source_kind="dataset").content.decode()
    assert "notes.csv, line 3: expected 2 columns, found 3" in refused
    assert not Source.objects.filter(name="Field Notes").exists()  # nothing half-stored

    text = upload(admin_client, GOOD, new_source="  Field   Notes ", new_source_kind="dataset").content.decode()
    source = Source.objects.get(name="Field Notes")
    assert source.kind == "dataset" and "Ingestion into Field Notes started" in text
    assert LogEntry.objects.filter(object_id=str(source.pk), action_flag=ADDITION).exists()


def test_the_form_asks_for_exactly_one_source_and_refuses_a_taken_name(db: Any, admin_client: Any) -> None:
    wire = SourceFactory(name="Wire", kind="news")
    assert "Choose the source of these documents, or name a new one." in upload(admin_client, GOOD).content.decode()
    both = upload(admin_client, GOOD, source=wire.pk, new_source="Other").content.decode()
    assert "not both" in both
    taken = upload(admin_client, GOOD, new_source="wire").content.decode()
    assert "exists already: choose it from the list above" in taken
    assert Source.objects.count() == 1


def test_the_source_chooser_groups_sources_by_kind(db: Any, admin_client: Any) -> None:
    SourceFactory(name="Wire", kind="news")
    SourceFactory(name="Almanac", kind="reference")
    SourceFactory(name="Gazette", kind="news", active=False)
    page = admin_client.get(reverse("admin:sources_source_upload")).content.decode()
    news = page[page.index('<optgroup label="News outlet">') :].split("</optgroup>", 1)[0]
    assert "Wire" in news and "Gazette (inactive)" in news and "Almanac" not in news
    assert '<optgroup label="Reference work">' in page
