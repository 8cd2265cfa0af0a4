"""The job API shows users the names of their files, never a path on the server."""

from __future__ import annotations

from tasks.models import Job
from tests.factories import JobFactory


def failed_upload_job(upload_dir: str) -> Job:
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
        message=f"Failed: FileNotFoundError: [Errno 2] No such file or directory: '{stored}'",
        error=f"FileNotFoundError: [Errno 2] No such file or directory: '{stored}'",
        log=[f"12:00:00 rejected {stored}: cannot be read"],
        result={"files": [{"file": stored, "error": f"{stored}: gone"}]},
    )


def test_a_job_shows_the_uploaded_files_name_in_its_error_log_and_result(as_analyst, settings):
    upload_dir = f"{settings.UPLOAD_DIR}/9f2c4e"
    job = failed_upload_job(upload_dir)
    for url in (f"/api/jobs/{job.pk}/", "/api/jobs/?kind=ingest"):
        response = as_analyst.get(url)
        assert response.status_code == 200
        text = response.content.decode()
        assert "notes.csv" in text
        assert upload_dir not in text and "uploads" not in text and "0000-" not in text
    body = as_analyst.get(f"/api/jobs/{job.pk}/").json()
    assert body["error"] == "FileNotFoundError: [Errno 2] No such file or directory: 'notes.csv'"
    assert body["result"] == {"files": [{"file": "notes.csv", "error": "notes.csv: gone"}]}
