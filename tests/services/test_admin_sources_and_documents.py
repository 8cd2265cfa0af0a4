"""The admin never deletes a source (deactivate instead), keeps Source.chunk_count right when
documents are deleted (one or in bulk), validates homepages strictly, and refuses JSON nested
deeper than JSON_MAX_DEPTH in its JSON fields with a form error."""

from __future__ import annotations

from typing import Any

from sources.models import Chunk, Document, Source
from sources.signals import recount_chunks
from tests.factories import ChunkFactory, DocumentFactory, SourceFactory


def source_with_chunks(name: str, per_document: list[int]) -> tuple[Source, list[Document]]:
    source = SourceFactory(name=name)
    documents = []
    for count in per_document:
        document = DocumentFactory(source=source)
        ChunkFactory.create_batch(count, document=document)
        documents.append(document)
    recount_chunks([source.pk])
    source.refresh_from_db()
    assert source.chunk_count == sum(per_document)
    return source, documents


def test_the_admin_cannot_delete_a_source_alone_or_in_bulk_and_deactivates_it_instead(db: Any, admin_client: Any):
    source = SourceFactory(name="wire")
    changelist = admin_client.get("/admin/sources/source/").content.decode()
    assert 'value="delete_selected"' not in changelist
    assert admin_client.get(f"/admin/sources/source/{source.pk}/delete/").status_code == 403
    assert admin_client.post(f"/admin/sources/source/{source.pk}/delete/", {"post": "yes"}).status_code == 403
    admin_client.post("/admin/sources/source/", {"action": "delete_selected", "_selected_action": [source.pk]})
    assert Source.objects.filter(pk=source.pk).exists()
    admin_client.post("/admin/sources/source/", {"action": "deactivate", "_selected_action": [source.pk]})
    source.refresh_from_db()
    assert source.active is False


def test_deleting_a_document_in_the_admin_lowers_its_sources_chunk_count(db: Any, admin_client: Any):
    source, (first, second, third) = source_with_chunks("wire", [3, 2, 4])
    response = admin_client.post(f"/admin/sources/document/{first.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.chunk_count == 6 == Chunk.objects.filter(source=source).count()
    response = admin_client.post(
        "/admin/sources/document/",
        {"action": "delete_selected", "_selected_action": [second.pk, third.pk], "post": "yes"},
    )
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.chunk_count == 0 == Chunk.objects.filter(source=source).count()


def test_a_bulk_delete_anywhere_recounts_every_source_it_touches(db: Any):
    wire, (first, _) = source_with_chunks("wire", [2, 3])
    blog, _ = source_with_chunks("blog", [5])
    Document.objects.filter(pk=first.pk).delete()
    Document.objects.filter(source=blog).delete()
    wire.refresh_from_db()
    blog.refresh_from_db()
    assert (wire.chunk_count, blog.chunk_count) == (3, 0)


def test_the_admin_source_form_refuses_a_homepage_that_is_not_a_plain_http_url(db: Any, admin_client: Any):
    response = admin_client.post(
        "/admin/sources/source/add/",
        {"name": "wire", "kind": "news", "homepage": 'https://ok.example/"><script>alert(1)</script>', "active": "on"},
    )
    assert response.status_code == 200
    assert "without spaces, quotes or angle brackets" in response.content.decode()
    assert not Source.objects.filter(name="wire").exists()


def test_deep_json_in_an_admin_json_field_is_a_form_error_not_a_crash(db: Any, admin_client: Any):
    document = DocumentFactory(source=SourceFactory(name="wire"), metadata={"lang": "en"})
    response = admin_client.post(
        f"/admin/sources/document/{document.pk}/change/",
        {
            "source": document.source_id,
            "title": document.title,
            "text": document.text,
            "url": "",
            "published_at_0": "",
            "published_at_1": "",
            "metadata": "[" * 100_000 + "]" * 100_000,
        },
    )
    assert response.status_code == 200
    assert "JSON nested deeper than 64 levels (JSON_MAX_DEPTH)" in response.content.decode()
    document.refresh_from_db()
    assert document.metadata == {"lang": "en"}


def test_bulk_activation_and_deactivation_leave_an_admin_history_entry_per_source(db: Any, admin_client: Any):
    from django.contrib.admin.models import CHANGE, LogEntry

    wire, farm, off = SourceFactory(name="wire"), SourceFactory(name="farm"), SourceFactory(name="off", active=False)
    admin_client.post(
        "/admin/sources/source/", {"action": "deactivate", "_selected_action": [wire.pk, farm.pk, off.pk]}
    )
    assert not Source.objects.filter(active=True).exists()
    entries = LogEntry.objects.filter(action_flag=CHANGE, content_type__model="source")
    assert sorted(int(e.object_id) for e in entries) == sorted([wire.pk, farm.pk])  # "off" did not change
    assert all("Active" in e.get_change_message() for e in entries)
    admin_client.post("/admin/sources/source/", {"action": "activate", "_selected_action": [wire.pk]})
    history = admin_client.get(f"/admin/sources/source/{wire.pk}/history/").content.decode()
    assert history.count("Changed Active.") == 2


def test_curators_start_claim_extraction_from_text_on_selected_sources_with_history(
    db: Any, admin_client: Any, monkeypatch: Any
):
    from django.contrib.admin.models import CHANGE, LogEntry

    from sources import claim_loading as claim_service
    from tasks.models import Job
    from tests.services.helpers import ScriptedModel

    monkeypatch.setattr(claim_service, "configured_generator", lambda: ScriptedModel({}))
    wire, farm = SourceFactory(name="wire"), SourceFactory(name="farm")
    DocumentFactory(source=wire, text="Oslo is the capital of Norway.")

    response = admin_client.post(
        "/admin/sources/source/",
        {"action": "extract_claims_from_text", "_selected_action": [wire.pk, farm.pk]},
        follow=True,
    )

    jobs = list(Job.objects.order_by("id"))
    assert [(j.kind, j.params["source_id"]) for j in jobs] == [(Job.Kind.INGEST, wire.pk), (Job.Kind.INGEST, farm.pk)]
    page = response.content.decode()
    assert "Claim extraction from documents started for 2 sources" in page
    assert f'wire (<a href="/jobs/{jobs[0].pk}/">job {jobs[0].pk}</a>)' in page
    entries = LogEntry.objects.filter(action_flag=CHANGE, content_type__model="source").order_by("object_id")
    assert sorted((int(e.object_id), e.get_change_message()) for e in entries) == [
        (wire.pk, f"Started claim extraction from its documents: job {jobs[0].pk}."),
        (farm.pk, f"Started claim extraction from its documents: job {jobs[1].pk}."),
    ]


def test_claim_extraction_from_text_without_a_language_model_starts_nothing_and_says_why(
    db: Any, admin_client: Any, settings: Any
):
    from django.contrib.admin.models import LogEntry

    from tasks.models import Job

    settings.GENERATOR_BACKEND = "extractive"
    wire = SourceFactory(name="wire")

    response = admin_client.post(
        "/admin/sources/source/", {"action": "extract_claims_from_text", "_selected_action": [wire.pk]}, follow=True
    )

    assert "no claims without a language model" in response.content.decode()
    assert Job.objects.count() == 0
    assert not LogEntry.objects.filter(content_type__model="source").exists()
