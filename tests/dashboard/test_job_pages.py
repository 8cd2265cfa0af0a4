"""Job pages: analysts and curators only (as every other page), and users see the names of
their files, never a server path."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from tasks.models import Job
from tests.factories import JobFactory


def upload_job(upload_dir: str) -> Job:
    stored = f"{upload_dir}/0000-notes.csv"
    return JobFactory(
        kind=Job.Kind.INGEST,
        state=Job.State.FAILED,
        params={
            "source_id": 1,
            "source": "wiki",
            "paths": [stored],
            "display_names": {stored: "notes.csv"},
            "upload_dir": upload_dir,
            "options": {},
        },
        message=f"Failed: 1 of 1 file(s) rejected: {stored}",
        error=f"1 of 1 file(s) rejected, nothing of them stored:\n{stored}: no such file or folder",
        log=[f"12:00:00 rejected {stored}: no such file or folder"],
        result={"files": [{"file": stored, "error": "gone"}]},
    )


def test_an_account_without_a_role_gets_403_on_the_job_list_a_job_and_its_status(nobody_client: Any) -> None:
    job = JobFactory(kind=Job.Kind.INGEST)
    for url in (reverse("job-list"), reverse("job-detail", args=[job.pk]), reverse("job-status", args=[job.pk])):
        assert nobody_client.get(url).status_code == 403, url


def test_an_analyst_sees_the_uploaded_files_name_and_no_server_path_on_the_job_pages(
    analyst_client: Any, settings: Any
) -> None:
    upload_dir = f"{settings.UPLOAD_DIR}/5be2c1"
    job = upload_job(upload_dir)
    for url in (reverse("job-list"), reverse("job-detail", args=[job.pk]), reverse("job-status", args=[job.pk])):
        response = analyst_client.get(url)
        assert response.status_code in (200, 286), url
        page = response.content.decode()
        assert "notes.csv" in page, url
        assert str(settings.UPLOAD_DIR) not in page and "0000-" not in page, url
    detail = analyst_client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "upload_dir" not in detail and "display_names" not in detail and "&#x27;paths&#x27;" not in detail
    # The parameters read as lines ("Files: notes.csv"), never as a Python dict.
    assert '<span class="readable-label">Files</span>: notes.csv' in detail
    assert "&#x27;files&#x27;" not in detail


def test_a_job_started_from_the_command_line_shows_file_names_not_the_folders_they_came_from(
    analyst_client: Any,
) -> None:
    job = JobFactory(
        kind=Job.Kind.INGEST,
        params={"source_id": 1, "source": "wiki", "paths": ["/srv/corpus/2024/wire.jsonl"], "options": {}},
        error="/srv/corpus/2024/wire.jsonl: no such file or folder",
        state=Job.State.FAILED,
    )
    page = analyst_client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "wire.jsonl: no such file or folder" in page
    assert "/srv/corpus" not in page
