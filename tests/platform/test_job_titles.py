"""The job pages read each kind of job through the app that owns it (runtime.jobs.JOB_TITLES):
the tasks app shows every job without knowing any app's models."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest

from runtime.jobs import JOB_HEADLINES, JOB_TITLES, JobLink, JobRecord, JobTitle
from tasks.describe import describe_jobs, headline
from tasks.models import Job
from tests.factories import JobFactory, SourceFactory

pytestmark = pytest.mark.django_db


def test_each_app_registers_the_kinds_of_job_it_owns() -> None:
    assert set(JOB_TITLES.names()) == {"ask", "demo", "estimate", "ingest", "reembed"}


def test_a_kind_reads_as_its_app_says_and_an_undescribed_one_by_its_kind_and_message() -> None:
    other = JobFactory(kind=Job.Kind.OTHER, message="halfway")
    with JOB_TITLES.isolated(), JOB_HEADLINES.isolated():
        [plain] = describe_jobs([other])
        assert (plain.title, plain.headline, plain.links) == ("Other job", "halfway", [])

        @JOB_TITLES.register("other")
        def titles(jobs: Sequence[JobRecord]) -> dict[int, JobTitle]:
            return {job.pk: JobTitle("Housekeeping", (JobLink("Home", "/"),)) for job in jobs}

        @JOB_HEADLINES.register("other")
        def tidy(job: JobRecord) -> str | None:
            return "all tidy"

        [view] = describe_jobs([other])
    assert (view.title, view.headline, [link.label for link in view.links]) == ("Housekeeping", "all tidy", ["Home"])


def test_a_reembedding_names_its_sources_read_in_one_query(django_assert_num_queries) -> None:
    wiki, blog = SourceFactory(name="wiki"), SourceFactory(name="blog")
    jobs = [
        JobFactory(kind=Job.Kind.REEMBED, params={"source_ids": [wiki.pk, blog.pk]}),
        JobFactory(kind=Job.Kind.REEMBED, params={"source_ids": [blog.pk, 999_999]}),
    ]
    with django_assert_num_queries(1):
        views = describe_jobs(jobs)
    assert [v.title for v in views] == ["Re-embedding wiki, blog", "Re-embedding blog"]


def test_a_finished_ingestion_s_headline_is_read_from_its_record_without_a_query(
    django_assert_num_queries,
) -> None:
    wiki = SourceFactory(name="wiki")
    job = JobFactory(
        kind=Job.Kind.INGEST,
        state=Job.State.SUCCEEDED,
        message="stored message",
        params={"files": ["notes.csv"], "source": "wiki", "source_id": wiki.pk},
        result={"files": [{"file": "notes.csv", "documents": 0, "duplicates": 3}], "documents": 0, "duplicates": 3},
    )
    with django_assert_num_queries(0):
        line = headline(job)  # the polled job status shows it
    assert line.startswith("0 new documents, 3 already held") and line != job.message


def test_the_tasks_app_imports_no_models_of_core_or_sources_to_describe_jobs() -> None:
    tree = ast.parse((Path(__file__).resolve().parents[2] / "tasks/describe.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not {m for m in imported if m.startswith(("core.models", "sources"))}
