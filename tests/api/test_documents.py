"""Documents: filtered listing, detail, and all-or-nothing bulk upload that starts a job."""

from __future__ import annotations

import datetime as dt

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from sources.models import Document
from tasks.models import Job
from tests.factories import DocumentFactory, SourceFactory
from tests.helpers import error_of


def utc(year: int, month: int, day: int) -> dt.datetime:
    return dt.datetime(year, month, day, tzinfo=dt.UTC)


def titles(response) -> list[str]:
    assert response.status_code == 200, response.content
    return sorted(row["title"] for row in response.json()["results"])


def test_documents_are_filtered_by_source_and_published_date_range(as_analyst):
    wiki, blog = SourceFactory(name="wiki"), SourceFactory(name="blog")
    DocumentFactory(source=wiki, title="old", published_at=utc(2019, 5, 1))
    DocumentFactory(source=wiki, title="new", published_at=utc(2024, 5, 1))
    DocumentFactory(source=blog, title="post", published_at=utc(2024, 6, 1))
    assert titles(as_analyst.get(f"/api/documents/?source={wiki.pk}")) == ["new", "old"]
    assert titles(as_analyst.get("/api/documents/?published_after=2020-01-01")) == ["new", "post"]
    assert titles(as_analyst.get("/api/documents/?published_after=2020-01-01&published_before=2024-05-15")) == ["new"]


def test_documents_are_filtered_by_ingestion_time(as_analyst):
    early = DocumentFactory(title="early")
    DocumentFactory(title="late")
    Document.objects.filter(pk=early.pk).update(ingested_at=timezone.now() - dt.timedelta(days=10))
    since = (timezone.now() - dt.timedelta(days=1)).isoformat()
    assert titles(as_analyst.get("/api/documents/", {"ingested_after": since})) == ["late"]
    assert titles(as_analyst.get("/api/documents/", {"ingested_before": since})) == ["early"]


def test_a_malformed_date_filter_is_a_400_naming_it(as_analyst):
    response = as_analyst.get("/api/documents/?published_after=last-tuesday")
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["published_after"]


def test_a_document_detail_carries_its_text_metadata_and_chunk_count(as_analyst):
    document = DocumentFactory(text="The Eiffel Tower is in Paris.", metadata={"lang": "en"})
    body = as_analyst.get(f"/api/documents/{document.pk}/").json()
    assert body["text"] == "The Eiffel Tower is in Paris."
    assert body["metadata"] == {"lang": "en"}
    assert body["chunk_count"] == 0
    assert body["source_name"] == document.source.name


def test_the_list_is_paginated_with_a_page_size_parameter(as_analyst):
    DocumentFactory.create_batch(5)
    body = as_analyst.get("/api/documents/?page_size=2&page=2").json()
    assert body["count"] == 5
    assert len(body["results"]) == 2
    assert body["next"] and body["previous"]


def test_a_json_upload_is_validated_then_started_as_a_job(as_curator, curator):
    source = SourceFactory(name="wiki")
    body = {
        "source": source.pk,
        "documents": [
            {
                "text": "The Eiffel Tower is in Paris.",
                "title": "Eiffel",
                "url": "https://example.org/eiffel",
                "published": "2020-01-02",
            },
            {"text": "Mount Everest is 8849 metres high."},
        ],
    }
    response = as_curator.post("/api/documents/", body, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job"])
    assert job.kind == Job.Kind.INGEST
    assert job.created_by == curator
    assert response["Location"].endswith(f"/api/jobs/{job.pk}/")
    assert response.json()["documents"] == 2


def test_a_bad_record_in_a_json_upload_names_its_index_and_field_and_stores_nothing(as_curator):
    source = SourceFactory(name="wiki")
    body = {"source": source.pk, "documents": [{"text": "Fine."}, {"text": "Also fine.", "published": "next week"}]}
    response = as_curator.post("/api/documents/", body, format="json")
    assert response.status_code == 400
    fields = error_of(response)["fields"]
    assert list(fields) == ["documents.1.published"]
    assert "not an ISO date" in fields["documents.1.published"][0]
    assert not Job.objects.exists()
    assert not Document.objects.exists()


def test_an_empty_text_in_a_json_upload_is_refused_by_the_adapter(as_curator):
    source = SourceFactory(name="wiki")
    response = as_curator.post("/api/documents/", {"source": source.pk, "documents": [{"text": "   "}]}, format="json")
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["documents.0.text"]


def test_unknown_keys_in_an_uploaded_document_are_rejected(as_curator):
    source = SourceFactory(name="wiki")
    body = {"source": source.pk, "documents": [{"text": "Fine.", "author": "me"}]}
    response = as_curator.post("/api/documents/", body, format="json")
    assert response.status_code == 400
    assert error_of(response)["fields"] == {"documents.0.author": ["Unknown field."]}
    assert not Job.objects.exists()


def test_an_upload_into_an_unknown_or_deactivated_source_names_the_source(as_curator):
    response = as_curator.post("/api/documents/", {"source": 987654, "documents": [{"text": "x"}]}, format="json")
    assert list(error_of(response)["fields"]) == ["source"]
    closed = SourceFactory(name="closed", active=False)
    response = as_curator.post("/api/documents/", {"source": closed.pk, "documents": [{"text": "x"}]}, format="json")
    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["source"]


def test_a_multipart_upload_of_several_files_starts_one_job(as_curator):
    source = SourceFactory(name="wiki")
    files = [
        SimpleUploadedFile("notes.csv", b"title,text\nA,The sky is blue.\nB,Grass is green.\n"),
        SimpleUploadedFile("more.jsonl", b'{"text": "Honey never spoils."}\n'),
    ]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 202, response.content
    assert response.json()["files"] == 2
    assert response.json()["documents"] == 3
    assert Job.objects.get(pk=response.json()["job"]).params["source_id"] == source.pk


def test_one_bad_file_in_a_multipart_upload_refuses_all_of_them_naming_file_and_line(as_curator):
    source = SourceFactory(name="wiki")
    files = [
        SimpleUploadedFile("good.txt", b"Honey never spoils."),
        SimpleUploadedFile("bad.jsonl", b'{"text": "fine"}\n{"text": broken}\n'),
    ]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 400
    message = error_of(response)["fields"]["files"][0]
    assert "bad.jsonl, line 2" in message
    assert not Job.objects.exists()


def test_an_unsupported_file_type_is_refused(as_curator):
    source = SourceFactory(name="wiki")
    files = [SimpleUploadedFile("slides.pptx", b"PK\x03\x04")]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 400
    assert "unsupported file type" in error_of(response)["fields"]["files"][0]


def test_a_file_over_the_size_limit_gets_413_and_no_job(as_curator, settings):
    settings.INGEST_MAX_FILE_BYTES = 100
    settings.API_MAX_UPLOAD_BYTES = 10_000
    source = SourceFactory(name="wiki")
    files = [SimpleUploadedFile("big.txt", b"word " * 100)]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"
    assert "big.txt" in error_of(response)["message"]
    assert not Job.objects.exists()


def test_a_json_body_over_the_size_limit_gets_413(as_curator, settings):
    settings.INGEST_MAX_FILE_BYTES = 200
    source = SourceFactory(name="wiki")
    body = {"source": source.pk, "documents": [{"text": "word " * 100}]}
    response = as_curator.post("/api/documents/", body, format="json")
    assert response.status_code == 413
    assert not Job.objects.exists()


def test_a_multipart_body_over_the_upload_limit_gets_413(as_curator, settings):
    settings.API_MAX_UPLOAD_BYTES = 300
    source = SourceFactory(name="wiki")
    files = [SimpleUploadedFile(f"{i}.txt", b"word " * 40) for i in range(3)]
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": files}, format="multipart")
    assert response.status_code == 413


def test_a_body_that_is_not_json_is_a_400(as_curator):
    response = as_curator.post("/api/documents/", b"{not json", content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "parse_error"


def test_a_date_filter_with_an_offset_postgresql_cannot_store_is_read_as_utc(as_analyst):
    DocumentFactory(title="dated", published_at=utc(2024, 1, 2))
    response = as_analyst.get("/api/documents/", {"published_after": "2024-01-02T16:00:00+17:00"})
    assert titles(response) == ["dated"]
    assert as_analyst.get("/api/documents/", {"published_after": "0001-01-01T00:00:00+05:00"}).status_code == 400
