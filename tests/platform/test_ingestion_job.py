"""Ingestion through the real Celery worker on a real broker, into the real database."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from sources.models import Chunk, Document, Source
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.factories import SourceFactory


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def last_job() -> Job:
    return Job.objects.order_by("-id").first()  # type: ignore[return-value]


def test_the_ingest_command_stores_documents_and_chunks_through_the_worker(worker, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    write(folder, "a.txt", "# Eiffel\nThe Eiffel Tower is in Paris. It opened in 1889.")
    write(folder, "b.jsonl", '{"text": "Mount Everest is 8849 metres high.", "title": "Everest"}\n')
    call_command("ingest", str(folder), source="wiki", wait=True, timeout=120)
    job = last_job()
    assert job.state == Job.State.SUCCEEDED
    assert job.percent == 100
    source = Source.objects.get(name="wiki")
    assert sorted(source.documents.values_list("title", flat=True)) == ["Eiffel", "Everest"]
    assert source.chunk_count == Chunk.objects.filter(source=source).count() == 2
    assert all(len(c.embedding) == 384 for c in Chunk.objects.filter(source=source))


def test_re_ingesting_the_same_text_creates_nothing_new(worker, tmp_path):
    path = write(tmp_path, "a.txt", "Water boils at 100 degrees Celsius at sea level.")
    call_command("ingest", str(path), source="physics", wait=True, timeout=120)
    copy = write(tmp_path, "copy.txt", "Water  boils at 100 degrees Celsius\nat sea level.")  # same text, other spacing
    call_command("ingest", str(path), str(copy), source="physics", wait=True, timeout=120)
    assert Document.objects.filter(source__name="physics").count() == 1
    assert Chunk.objects.filter(source__name="physics").count() == 1
    assert last_job().result["duplicates"] == 2


def test_a_malformed_file_fails_the_job_with_its_line_and_stores_nothing_of_it(worker, tmp_path):
    good = write(tmp_path, "good.txt", "Honey never spoils.")
    bad = write(tmp_path, "bad.jsonl", '{"text": "fine"}\n{"text": broken}\n')
    with pytest.raises(CommandError, match=r"bad.jsonl, line 2: invalid JSON"):
        call_command("ingest", str(good), str(bad), source="mixed", wait=True, timeout=120)
    job = last_job()
    assert job.state == Job.State.FAILED
    assert "bad.jsonl, line 2" in job.error
    texts = list(Document.objects.filter(source__name="mixed").values_list("text", flat=True))
    assert texts == ["Honey never spoils."]  # the good file is kept, nothing of the bad one


def test_an_upload_through_the_admin_creates_a_job_that_the_worker_completes(worker, admin_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    source = SourceFactory(name="uploads")
    upload = SimpleUploadedFile("notes.csv", b"title,text\nA,The sky is blue.\nB,Grass is green.\n")
    response = admin_client.post(
        "/admin/sources/source/upload/", {"source": source.pk, "files": [upload], "csv_mapping": ""}
    )
    assert response.status_code == 302
    job = wait_for_job(last_job().pk, timeout=120)
    assert job.state == Job.State.SUCCEEDED
    assert Document.objects.filter(source=source).count() == 2


def test_a_malformed_upload_is_refused_by_the_admin_form_before_any_job(db, admin_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    source = SourceFactory(name="uploads")
    upload = SimpleUploadedFile("notes.csv", b"title,text\nA,The sky is blue.\nB,Grass,green\n")
    response = admin_client.post("/admin/sources/source/upload/", {"source": source.pk, "files": [upload]})
    assert response.status_code == 200
    assert "notes.csv, line 3: expected 2 columns, found 3" in response.content.decode()
    assert Job.objects.count() == 0
    assert Document.objects.count() == 0
